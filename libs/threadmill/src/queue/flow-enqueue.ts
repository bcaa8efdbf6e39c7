import { newRunId } from '../codec/run-id.js';
import type { FlowStore } from '../backend/flow-store.js';
import type { NewRun } from '../records/backend-records.js';
import type { NewFlowNode } from '../records/flow-records.js';
import { InvalidFlowError } from '../errors/invalid-flow.error.js';
import type { EnqueueManyItem } from './enqueue-options.interface.js';
import type { BatchSpec, EnqueuedFlow, FlowNodeSpec, FlowSpec } from './flow-options.interface.js';
import { planFlow } from './flow-plan.js';

/** Validates and encodes one item into a new run named by `newId` (the queue's own `prepare`). */
export type PrepareNode = (item: EnqueueManyItem, newId: () => string) => { run: NewRun; taskName: string };

/**
 * Stores flows for `TaskQueue` (`enqueueFlow`, `enqueueChain`, `enqueueBatch`):
 * checks the whole flow and encodes every node before anything is written,
 * names the flow and its nodes with one routing key (on a partitioned
 * backend they share a partition), and stores it in one backend call.
 */
export class FlowEnqueue {
  constructor(
    private readonly flows: Pick<FlowStore, 'store'>,
    private readonly newId: (key?: string) => string,
    private readonly prepare: PrepareNode,
    private readonly announce: (queue: string, taskName: string) => void,
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
    return { id, nodes: Object.fromEntries(idOf) };
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
