import type { FlowStore } from '../../backend/flow-store.js';
import type { Acknowledgement, LeaseRef, Outcome, Segment } from '../../backend/task-backend.js';
import type {
  FlowEdge,
  FlowOutcomeStatus,
  FlowState,
  NewFlow,
  NewFlowNode,
  StoredDependency,
  StoredFlow,
} from '../../records/flow-records.js';
import { TaskStatus } from '../../records/task-status.enum.js';
import { cancelRun } from './memory-cancel.js';
import { leaseHolds } from './memory-acknowledge.js';
import { MemoryFlows, type MemoryFlow } from './memory-flow-settle.js';
import { MemoryRun } from './memory-run.js';
import type { MemoryState } from './memory-state.js';

/** The segments in the order `purge.lua`'s phases walk them. */
const PURGE_PHASES: readonly Segment[] = [
  'running',
  'deferred',
  'ready',
  'successful',
  'failed',
  'quarantined',
  'cancelled',
  'waiting',
];

/**
 * The in-memory {@link FlowStore}: the same steps as `lua/flow-store.lua`,
 * `flow-dependencies.lua` and `flow-cancel.lua`, each done in one turn of the
 * event loop. A node is a run of the backend's store, with its flow's id in
 * its `flow` field; a node with dependencies is WAITING, in its queue's
 * `waiting` segment, which no claim reads. The backend's acknowledge, cancel
 * and dequeue settle nodes through {@link settle} (`memory-flow-settle.ts`).
 */
export class MemoryFlowStore implements FlowStore {
  private readonly flows: MemoryFlows;

  constructor(
    private readonly state: MemoryState,
    /** Tells the backend's pending listener of nodes a store made pending. */
    private readonly madePending: (ids: readonly string[]) => Promise<void>,
  ) {
    this.flows = new MemoryFlows(state);
  }

  async store(flow: NewFlow): Promise<{ now: number; created: boolean }> {
    const { state } = this;
    const now = state.clock.now();
    if (this.flows.live(flow.id, now)) return { now, created: false };
    checkOrder(flow);
    const record: MemoryFlow = {
      id: flow.id,
      state: 'RUNNING',
      createdAt: now,
      open: flow.nodes.length,
      failed: 0,
      cancelled: false,
      nodes: new Map(),
    };
    const roots: string[] = [];
    for (const { run, name, after } of flow.nodes) {
      for (const { id, onFailure } of after) record.nodes.get(id)!.dependents!.push({ id: run.id, onFailure });
      record.nodes.set(run.id, {
        id: run.id,
        name,
        queue: run.queue,
        after: [...after],
        dependents: [],
        pending: after.length,
      });
      const fields: Record<string, string> = {
        payload: run.payload,
        queue: run.queue,
        score: String(state.nextScore(run.priority)),
        enqueuedAt: String(now),
        flow: flow.id,
      };
      if (run.leaseTtlMs > 0) fields['leaseTtl'] = String(run.leaseTtlMs);
      const due = run.runAt > 0 ? run.runAt : run.delayMs > 0 ? now + run.delayMs : 0;
      if (due > now) fields['runAfter'] = String(due);
      if (run.limitGroup !== undefined) fields['group'] = run.limitGroup;
      const stored = new MemoryRun(run.id, run.queue, fields);
      state.runs.set(run.id, stored);
      if (after.length > 0) {
        fields['status'] = TaskStatus.WAITING;
        state.queue(run.queue).waiting.set(run.id, now);
      } else {
        this.flows.pend(stored, now);
        roots.push(run.id);
      }
      state.queue(run.queue).countMinute(now, 'enqueued');
    }
    this.flows.add(record);
    if (roots.length > 0) await this.madePending(roots);
    return { now, created: true };
  }

  /** As `lua/flow-extend.lua`: new nodes beside the running `caller`, which its WAITING dependents wait for too. */
  async extend(caller: LeaseRef, nodes: readonly NewFlowNode[]): Promise<'added' | 'lost' | 'not-a-node'> {
    const { state } = this;
    const now = state.clock.now();
    const run = state.runs.get(caller.id);
    const flowId = run?.fields['flow'];
    if (flowId === undefined) return 'not-a-node';
    if (!leaseHolds(run, caller.token, now)) return 'lost';
    const flow = this.flows.live(flowId, now)!;
    const waiting = (flow.nodes.get(caller.id)!.dependents ?? []).filter(
      (edge) => state.runs.get(edge.id)?.fields['status'] === TaskStatus.WAITING,
    );
    for (const { run: added, name } of nodes) {
      const fields: Record<string, string> = {
        payload: added.payload,
        queue: added.queue,
        score: String(state.nextScore(added.priority)),
        enqueuedAt: String(now),
        flow: flowId,
      };
      if (added.leaseTtlMs > 0) fields['leaseTtl'] = String(added.leaseTtlMs);
      const due = added.runAt > 0 ? added.runAt : added.delayMs > 0 ? now + added.delayMs : 0;
      if (due > now) fields['runAfter'] = String(due);
      if (added.limitGroup !== undefined) fields['group'] = added.limitGroup;
      const stored = new MemoryRun(added.id, added.queue, fields);
      state.runs.set(added.id, stored);
      flow.nodes.set(added.id, {
        id: added.id,
        name,
        queue: added.queue,
        after: [],
        dependents: waiting.map((edge) => ({ ...edge })),
        pending: 0,
      });
      for (const edge of waiting) {
        const dependent = flow.nodes.get(edge.id)!;
        dependent.pending++;
        (dependent.after as FlowEdge[]).push({ id: added.id, onFailure: edge.onFailure });
      }
      flow.open++;
      this.flows.pend(stored, now);
      state.queue(added.queue).countMinute(now, 'enqueued');
    }
    this.flows.add(flow);
    await this.madePending(nodes.map((node) => node.run.id));
    return 'added';
  }

  async load(id: string): Promise<StoredFlow | null> {
    const flow = this.flows.live(id, this.state.clock.now());
    if (!flow) return null;
    // As the Redis store lists them: by run id, the order the flow's ids were made in.
    const nodes = [...flow.nodes.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return {
      id: flow.id,
      state: flow.state,
      createdAt: flow.createdAt,
      ...(flow.finishedAt === undefined ? {} : { finishedAt: flow.finishedAt }),
      open: flow.open,
      nodes: nodes.map(({ id: nodeId, name, queue, after, outcome, value }) => ({
        id: nodeId,
        name,
        queue,
        after,
        ...(outcome === undefined ? {} : { outcome, value: value! }),
      })),
    };
  }

  /** Every edge of the node, as `flow-dependencies.lua` answers (the caller leaves out what it does not list). */
  async dependencies(runId: string): Promise<StoredDependency[]> {
    const flowId = this.state.runs.get(runId)?.fields['flow'];
    const flow = flowId === undefined ? undefined : this.flows.live(flowId, this.state.clock.now());
    const node = flow?.nodes.get(runId);
    if (!flow || !node) return [];
    return node.after.map(({ id, onFailure }) => {
      const { name, outcome, value } = flow.nodes.get(id)!;
      return { id, name, onFailure, ...(outcome === undefined ? {} : { outcome, value: value! }) };
    });
  }

  /** At once, as `flow-cancel.lua` does over its pages when nothing interleaves. */
  async cancel(id: string): Promise<{ cancelled: number; state: FlowState | null }> {
    const now = this.state.clock.now();
    const flow = this.flows.live(id, now);
    if (!flow) return { cancelled: 0, state: null };
    if (flow.state !== 'RUNNING') return { cancelled: 0, state: flow.state };
    flow.cancelled = true;
    let cancelled = 0;
    for (const node of flow.nodes.values()) {
      if (node.outcome !== undefined) continue;
      // Its edges go unapplied: its dependents are cancelled with it, not failed by it.
      node.dependents = undefined;
      const run = this.state.runs.get(node.id);
      if (run) cancelRun(this.state, node.id, run.queue);
      this.flows.record(flow, node, 'CANCELLED', '', now);
      cancelled++;
    }
    return { cancelled, state: flow.state };
  }

  /** The flow side of an acknowledgement call (`lua/includes/effect-flow.lua`): each applied outcome that settles its run. */
  acknowledged(acks: readonly Acknowledgement[], applied: readonly boolean[]): void {
    acks.forEach((ack, i) => {
      const settled = applied[i] && settledOutcome(ack.outcome);
      if (settled) this.flows.settle(ack.id, settled.outcome, settled.value);
    });
  }

  /** A cancel or a dequeue of run `id` settles its node CANCELLED (`MemoryFlows.settle`); returns the nodes it readied. */
  settle(id: string, outcome: FlowOutcomeStatus, value: string): string[] {
    return this.flows.settle(id, outcome, value);
  }

  /**
   * Before a purge of `queue` removes its runs (`purge.lua`): each node goes
   * as CANCELLED for its flow, met in the order of the script's phases (its
   * WAITING nodes last), so a node a dependency's purge fails goes as that
   * failure. Returns the nodes it readied (of other queues, or this one's,
   * which the purge removes).
   */
  purging(queue: string): string[] {
    const segments = this.state.queue(queue);
    // Each run where it was before any settled (WAITING last, as the script's last phase meets them).
    const met = PURGE_PHASES.flatMap((segment) => [...segments.segment(segment).keys()]);
    return met.flatMap((id) => this.flows.settle(id, 'CANCELLED', ''));
  }
}

/**
 * What an applied outcome settles a flow node with, and the value the
 * acknowledgement carries for it (`acknowledge-args.ts`); undefined for a
 * retry, which does not settle the run.
 */
function settledOutcome(outcome: Outcome): { outcome: FlowOutcomeStatus; value: string } | undefined {
  switch (outcome.kind) {
    case 'successful':
      return { outcome: 'SUCCESSFUL', value: outcome.returnValue ?? '' };
    case 'failed':
      return { outcome: 'FAILED', value: JSON.stringify(outcome.error) };
    case 'quarantine':
      return { outcome: 'QUARANTINED', value: outcome.error ? JSON.stringify(outcome.error) : '' };
    case 'retry':
      return undefined;
  }
}

/** A flow whose edge names a node not stored before it would leave that dependent WAITING for ever: refused whole. */
function checkOrder(flow: NewFlow): void {
  const earlier = new Set<string>();
  for (const { run, after } of flow.nodes) {
    const stray = after.find((edge) => !earlier.has(edge.id));
    if (stray !== undefined) {
      throw new Error(
        `Flow ${flow.id}: node ${run.id} depends on ${stray.id}, which is not an earlier node of the flow; list every dependency before its dependents (TaskQueue.enqueueFlow does).`,
      );
    }
    earlier.add(run.id);
  }
}
