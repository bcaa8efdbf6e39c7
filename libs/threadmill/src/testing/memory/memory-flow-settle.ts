import type { FlowEdge, FlowOutcomeStatus, FlowState } from '../../records/flow-records.js';
import type { TaskError } from '../../records/task-result.js';
import { TaskStatus } from '../../records/task-status.enum.js';
import { edgeEffect, finishedFlowState } from '../../rules/flow-rules.js';
import { keptFor } from '../../rules/run-rules.js';
import type { MemoryRun } from './memory-run.js';
import { BROKER_TOPIC, type MemoryState } from './memory-state.js';

/** A node as its flow keeps it (the flow hash's `n:` and `e:` fields, and the run hash's `then` and `pending`). */
export interface MemoryFlowNode {
  readonly id: string;
  readonly name: string;
  readonly queue: string;
  readonly after: readonly FlowEdge[];
  outcome?: FlowOutcomeStatus;
  value?: string;
  /** The edges to its dependents, until its first outcome applies them: a requeued node runs again alone. */
  dependents: FlowEdge[] | undefined;
  /** Its dependencies not settled yet, while it is WAITING. */
  pending: number;
}

/** A flow's record (the Redis backend's `flow:<id>` hash). */
export interface MemoryFlow {
  readonly id: string;
  state: FlowState;
  readonly createdAt: number;
  finishedAt?: number;
  /** When the record of an ended flow goes, as its hash's expiry would remove it. */
  expiresAt?: number;
  /** Nodes without an outcome. */
  open: number;
  /** Outcomes other than a success. */
  failed: number;
  cancelled: boolean;
  readonly nodes: Map<string, MemoryFlowNode>;
}

/**
 * The in-memory backend's flow records, and the settling of their nodes:
 * the steps of `lua/includes/flow-settle.lua`, by the rules of
 * `rules/flow-rules.ts`.
 */
export class MemoryFlows {
  private readonly flows = new Map<string, MemoryFlow>();
  /** The flow of each node of a kept flow: a node settles after its run may be gone (a result TTL of 0). */
  private readonly flowOf = new Map<string, string>();

  constructor(private readonly state: MemoryState) {}

  add(flow: MemoryFlow): void {
    this.flows.set(flow.id, flow);
    for (const id of flow.nodes.keys()) this.flowOf.set(id, flow.id);
  }

  /** The flow's record, unless it expired (then it goes, as an expired key does). */
  live(id: string, now: number): MemoryFlow | undefined {
    const flow = this.flows.get(id);
    if (flow?.expiresAt !== undefined && now >= flow.expiresAt) {
      this.flows.delete(flow.id);
      for (const nodeId of flow.nodes.keys()) this.flowOf.delete(nodeId);
      return undefined;
    }
    return flow;
  }

  /**
   * Records the first outcome of node `id` (no flow node: nothing) and applies
   * it along its edges, failing, satisfying or readying its WAITING
   * dependents by `edgeEffect`; a dependent it fails settles in turn
   * (`settleFlowNodes`). `value`: the result or error JSON the outcome
   * carried, or ''. Returns the nodes it made READY.
   */
  settle(id: string, outcome: FlowOutcomeStatus, value: string): string[] {
    const now = this.state.clock.now();
    const readied: string[] = [];
    const work = [{ id, outcome, value }];
    for (let i = 0; i < work.length; i++) {
      const settled = work[i]!;
      const flowId = this.flowOf.get(settled.id);
      const flow = flowId === undefined ? undefined : this.live(flowId, now);
      const node = flow?.nodes.get(settled.id);
      if (!flow || !node?.dependents) continue;
      const edges = node.dependents;
      node.dependents = undefined;
      this.record(flow, node, settled.outcome, settled.value, now);
      for (const edge of edges) {
        const dependent = this.state.runs.get(edge.id);
        // A dependent readied by a `continue` edge, or cancelled, is not touched.
        if (dependent?.status !== TaskStatus.WAITING) continue;
        const effect = edgeEffect(edge.onFailure, settled.outcome);
        if (effect === 'fail') {
          work.push({ id: edge.id, outcome: 'FAILED', value: this.fail(dependent, settled.id, settled.outcome, now) });
        } else if (effect === 'ready' || --flow.nodes.get(edge.id)!.pending <= 0) {
          dependent.fields['status'] = TaskStatus.READY;
          this.state.queue(dependent.queue).waiting.delete(dependent.id);
          this.pend(dependent, now);
          readied.push(edge.id);
        }
      }
    }
    return readied;
  }

  /** A node's first outcome, in its flow's counts; the flow ends with its last open node (`finishFlow`). */
  record(flow: MemoryFlow, node: MemoryFlowNode, outcome: FlowOutcomeStatus, value: string, now: number): void {
    node.outcome = outcome;
    node.value = value;
    if (outcome !== 'SUCCESSFUL') flow.failed++;
    if (--flow.open > 0) return;
    flow.state = finishedFlowState(flow.cancelled, flow.failed);
    flow.finishedAt = now;
    // Kept as long as the longer-kept of its nodes' outcomes, as `RedisFlowStore` keeps it; 0: gone at once.
    const ttl = Math.max(this.state.resultTtls.successful, this.state.resultTtls.failed);
    flow.expiresAt = now + ttl;
    this.live(flow.id, now);
  }

  /** Puts a node that waits on nothing where a plain stored run goes: ready now, or deferred until its due time. */
  pend(run: MemoryRun, now: number): void {
    const queue = this.state.queue(run.queue);
    const due = Number(run.fields['runAfter'] ?? 0);
    if (due > now) {
      queue.deferred.set(run.id, due);
      this.state.wakeups.wake(BROKER_TOPIC);
    } else {
      queue.ready.set(run.id, run.score);
      this.state.wakeups.wake(run.queue);
    }
  }

  /**
   * Settles WAITING `run` FAILED by its dependency's outcome, uncharged (it
   * never started), as a failed attempt settles: counted, kept for the
   * failed TTL, its waiters told. Returns its error's JSON.
   */
  private fail(run: MemoryRun, dependencyId: string, outcome: FlowOutcomeStatus, now: number): string {
    const error: TaskError = {
      errorClass: 'DependencyFailedError',
      message: `Dependency ${dependencyId} ended ${outcome} and its edge fails this node (onFailure: fail)`,
      stack: '',
      attempt: 0,
    };
    const json = JSON.stringify(error);
    const queue = this.state.queue(run.queue);
    run.fields['status'] = TaskStatus.FAILED;
    run.fields['finishedAt'] = String(now);
    run.fields['errors'] = json;
    queue.waiting.delete(run.id);
    queue.countMinute(now, 'failed');
    this.state.log.publish({ id: run.id, fields: run.stored() }, now);
    const ttl = keptFor('failed', this.state.resultTtls);
    if (ttl === 0) {
      this.state.delete(run);
    } else {
      queue.failed.set(run.id, now);
      queue.keptFor.set(run.id, ttl);
    }
    return json;
  }
}
