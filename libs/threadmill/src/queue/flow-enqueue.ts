import { newRunId } from '../codec/run-id.js';
import type { FlowStore } from '../backend/flow-store.js';
import type { NewRun } from '../records/backend-records.js';
import type { NewFlowNode } from '../records/flow-records.js';
import { InvalidFlowError } from '../errors/invalid-flow.error.js';
import { LeaseLostError } from '../errors/lease-lost.error.js';
import type { LeaseRef } from '../records/backend-records.js';
import type { EnqueueManyItem } from './enqueue-options.interface.js';
import type { BatchSpec, EnqueuedFlow, FlowNodeSpec, FlowResult, FlowSpec } from './flow-options.interface.js';
import type { FlowState } from '../records/flow-records.js';
import type { TaskResult } from '../records/task-result.js';
import { TaskStatus } from '../records/task-status.enum.js';
import { finishedFlowState } from '../rules/flow-rules.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import { planFlow } from './flow-plan.js';

/** Validates and encodes one item into a new run named by `newId` (the queue's own `prepare`). */
export type PrepareNode = (item: EnqueueManyItem, newId: () => string) => { run: NewRun; taskName: string };

/**
 * The flow calls of `TaskQueue` (`enqueueFlow`, `enqueueChain`,
 * `enqueueBatch`, `addToFlow`, `cancelFlow`, `waitForFlow`). A flow is stored so:
 * checks the whole flow and encodes every node before anything is written,
 * names the flow and its nodes with one routing key (on a partitioned
 * backend they share a partition), and stores it in one backend call.
 */
export class FlowEnqueue {
  constructor(
    private readonly flows: Pick<FlowStore, 'store' | 'extend' | 'load' | 'cancel'>,
    private readonly newId: (key?: string) => string,
    private readonly prepare: PrepareNode,
    private readonly announce: (queue: string, taskName: string) => void,
    private readonly announceFlow: (id: string, nodes: number) => void,
  ) {}

  async enqueue(spec: FlowSpec): Promise<EnqueuedFlow> {
    const planned = planFlow(spec);
    if (spec.partitionKey !== undefined && (typeof spec.partitionKey !== 'string' || spec.partitionKey === '')) {
      throw new InvalidFlowError('partitionKey must be a non-empty string.');
    }
    // One key for the flow and every node: a partitioned backend places them together.
    const key = spec.partitionKey ?? newRunId();
    const id = this.newId(key);
    const idOf = new Map<string, string>();
    const names: string[] = [];
    const nodes: NewFlowNode[] = planned.map(({ name, item, after }) => {
      let run: NewRun;
      let taskName: string;
      try {
        ({ run, taskName } = this.prepare(item, () => this.newId(key)));
      } catch (error) {
        throw new InvalidFlowError(`node "${name}": ${(error as Error).message}`);
      }
      idOf.set(name, run.id);
      names.push(taskName);
      return { run, name, after: after.map((edge) => ({ id: idOf.get(edge.name)!, onFailure: edge.onFailure })) };
    });
    await this.flows.store({ id, nodes });
    nodes.forEach((node, i) => this.announce(node.run.queue, names[i]!));
    // Not gated on `created`: the id is new in each call, so only a resent copy of this call could have stored it.
    this.announceFlow(id, nodes.length);
    return { id, nodes: Object.fromEntries(idOf) };
  }

  /**
   * Adds runs to the flow of the running node `caller` (`TaskQueue.addToFlow`):
   * each runs now, and the caller's dependents still WAITING wait for them too.
   * @param newId names a run where the caller is (its partition)
   */
  async extend(
    caller: LeaseRef,
    nodes: Readonly<Record<string, FlowNodeSpec>>,
    newId: () => string,
  ): Promise<Record<string, string>> {
    if (nodes === null || typeof nodes !== 'object' || Object.keys(nodes).length === 0) {
      throw new InvalidFlowError('addToFlow takes its new nodes by name: { <name>: { task, args } }, at least one.');
    }
    const planned = planFlow({ nodes });
    const withAfter = planned.find((node) => node.after.length > 0);
    if (withAfter !== undefined) {
      throw new InvalidFlowError(`node "${withAfter.name}" sets after: nodes added to a running flow run at once.`);
    }
    const added = planned.map(({ name, item }) => {
      try {
        return { run: this.prepare(item, newId).run, name, after: [] };
      } catch (error) {
        throw new InvalidFlowError(`node "${name}": ${(error as Error).message}`);
      }
    });
    const outcome = await this.flows.extend(caller, added);
    if (outcome === 'lost') throw new LeaseLostError(caller.id);
    if (outcome === 'not-a-node')
      throw new InvalidFlowError(`run ${caller.id} is no flow node, so it has no flow to add to.`);
    return Object.fromEntries(added.map((node) => [node.name, node.run.id]));
  }

  /** `TaskQueue.cancelFlow`. */
  async cancel(id: string): Promise<{ cancelled: number; state: FlowState }> {
    const { cancelled, state } = await this.flows.cancel(id);
    if (state === null) throw new TaskResultNotFoundError(id);
    return { cancelled, state };
  }

  /** `TaskQueue.waitForFlow`: waits for each node with `waitFor`, and for the nodes added meanwhile. */
  async wait(id: string, waitFor: (runId: string) => Promise<TaskResult>): Promise<FlowResult> {
    let flow = await this.flows.load(id);
    if (!flow) throw new TaskResultNotFoundError(id);
    const results = new Map<string, TaskResult>();
    // Nodes added while the flow runs (`addToFlow`) come in with a node that is waited for: read again until none is new.
    for (;;) {
      const unseen = flow.nodes.filter((node) => !results.has(node.id));
      if (unseen.length === 0) break;
      const settled = await Promise.all(unseen.map((node) => waitFor(node.id)));
      unseen.forEach((node, i) => results.set(node.id, settled[i]!));
      const again = await this.flows.load(id);
      // Gone once it ended when results are not kept (a TTL of 0): its nodes tell its end.
      flow = again ?? { ...flow, state: endState(results) };
      if (!again) break;
    }
    return { id, state: flow.state, nodes: Object.fromEntries(flow.nodes.map((n) => [n.name, results.get(n.id)!])) };
  }

  /** A chain: each item waits for the one before it (and reads its result in `context.dependencies()`). */
  async chain(items: readonly FlowNodeSpec[], partitionKey?: string): Promise<EnqueuedFlow> {
    if (!Array.isArray(items) || items.length === 0) {
      throw new InvalidFlowError('a chain is a non-empty array of { task, args } items.');
    }
    const nodes: Record<string, FlowNodeSpec> = {};
    items.forEach((item, i) => {
      if (item !== null && typeof item === 'object' && 'after' in item) {
        throw new InvalidFlowError(`chain item ${i} sets after: a chain's items wait for the one before each.`);
      }
      nodes[String(i)] = i === 0 ? item : { ...item, after: [String(i - 1)] };
    });
    return this.enqueue(partitionKey === undefined ? { nodes } : { nodes, partitionKey });
  }

  /**
   * A batch: independent runs (`run-0`, `run-1`, ...), and its callbacks
   * `onComplete` (waits for every run, ignoring failures) and `onSuccess`
   * (fails without running when a run does not succeed).
   */
  async batch(spec: BatchSpec): Promise<EnqueuedFlow> {
    if (spec === null || typeof spec !== 'object' || !Array.isArray(spec.runs) || spec.runs.length === 0) {
      throw new InvalidFlowError(
        'a batch is { runs: [...], onComplete?, onSuccess?, partitionKey? } with at least one run.',
      );
    }
    for (const key of Object.keys(spec)) {
      if (!['runs', 'onComplete', 'onSuccess', 'partitionKey'].includes(key)) {
        throw new InvalidFlowError(
          `unknown batch option "${key}"; a batch takes runs, onComplete, onSuccess, partitionKey.`,
        );
      }
    }
    const nodes: Record<string, FlowNodeSpec> = {};
    const runs = spec.runs.map((run, i) => {
      nodes[`run-${i}`] = run;
      return `run-${i}`;
    });
    if (spec.onComplete !== undefined) {
      nodes['onComplete'] = { ...spec.onComplete, after: runs.map((node) => ({ node, onFailure: 'ignore' as const })) };
    }
    if (spec.onSuccess !== undefined) nodes['onSuccess'] = { ...spec.onSuccess, after: runs };
    return this.enqueue(spec.partitionKey === undefined ? { nodes } : { nodes, partitionKey: spec.partitionKey });
  }
}

/** A flow's end as its nodes' results tell it (`finishedFlowState`, not knowing of a cancel of the flow). */
function endState(results: ReadonlyMap<string, TaskResult>): FlowState {
  const failed = [...results.values()].filter((result) => result.status !== TaskStatus.SUCCESSFUL).length;
  return finishedFlowState(false, failed);
}
