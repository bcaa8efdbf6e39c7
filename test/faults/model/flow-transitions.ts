import assert from 'node:assert/strict';
import { rotateClaim, type ClaimedRuns } from '../../../libs/threadmill/src/backend/claim-rotation.js';
import type { Outcome } from '../../../libs/threadmill/src/backend/task-backend.js';
import type { FlowEdge, FlowOutcomeStatus, FlowState } from '../../../libs/threadmill/src/records/flow-records.js';
import { edgeEffect, finishedFlowState } from '../../../libs/threadmill/src/rules/flow-rules.js';
import {
  cancellable,
  dequeueable,
  OUTCOME_COUNTER,
  readyScore,
  requeueable,
} from '../../../libs/threadmill/src/rules/run-rules.js';
import {
  nodesIn,
  type FlowModel,
  type FlowQueue,
  type ModelFlowNode,
  type NodeLeaseRef,
  type NodeStatus,
} from './flow-model.js';
import { STATUS_TEXT, type RunModel } from './run-model.js';

/**
 * The flow side of the model: what each script does to flows and their
 * nodes (`lua/flow-store.lua`, `flow-cancel.lua`, and `cancel.lua`,
 * `dequeue.lua`, `acknowledge.lua` through `includes/flow-settle.lua`),
 * applying the library's rules (`edgeEffect`, `finishedFlowState`,
 * `cancellable`, `dequeueable`, `requeueable`) to the Redis layout of
 * `flow-model.ts`.
 */

/** A node of a flow to store, as a command plans it. */
export interface PlannedNode {
  readonly id: string;
  readonly name: string;
  readonly queue: FlowQueue;
  readonly priority: number;
  /** Stored with a delay ({@link DEFER_MS} from the store): deferred when it is readied. */
  readonly delayed: boolean;
  /** Its dependencies: nodes stored before it. */
  readonly after: readonly FlowEdge[];
}

export interface PlannedFlow {
  readonly id: string;
  readonly nodes: readonly PlannedNode[];
}

/** The status a reader sees of a node (`load`, `cancel`, `dequeue`); '' once its run left. */
export function statusText(status: NodeStatus): string {
  return status === 'gone' ? '' : STATUS_TEXT[status];
}

/** A node's ready score (`flow-store.lua`: -priority × 2^44 + seq). */
export const nodeScore = (node: ModelFlowNode): number => readyScore(node.priority, node.seq);

function count(flows: FlowModel, queue: FlowQueue, counter: string): void {
  flows.stats[queue][counter] = (flows.stats[queue][counter] ?? 0) + 1;
}

/** A registered node settled or left: the script publishes it, once, and its registration ends. */
function publish(model: RunModel, id: string, what: string): void {
  if (!model.watched.delete(id)) return;
  model.published.push(`${id} ${what}`);
}

/**
 * A flow stored whole (`flow-store.lua`, phase `whole`): the call's nodes
 * take the next `seq` values; a node with dependencies waits WAITING with
 * all of them pending, one without is READY (deferred when delayed); every
 * node is open, and its dependencies' `then` name it.
 */
export function storeFlowInModel(model: RunModel, plan: PlannedFlow): void {
  const { flows } = model;
  assert.ok(!flows.flows.has(plan.id), `flow ${plan.id} is new`);
  const base = model.seq;
  model.seq += plan.nodes.length;
  plan.nodes.forEach((planned, i) => {
    const waiting = planned.after.length > 0;
    flows.nodes.set(planned.id, {
      id: planned.id,
      flow: plan.id,
      name: planned.name,
      queue: planned.queue,
      priority: planned.priority,
      seq: base + i + 1,
      delayed: planned.delayed,
      after: planned.after,
      dependents: [],
      status: waiting ? 'waiting' : planned.delayed ? 'deferred' : 'ready',
      ...(waiting ? { pending: planned.after.length } : {}),
      charged: 0,
    });
    for (const edge of planned.after)
      flows.nodes.get(edge.id)!.dependents!.push({ id: planned.id, onFailure: edge.onFailure });
    flows.flowed.add(planned.queue);
    count(flows, planned.queue, 'enqueued');
  });
  flows.flows.set(plan.id, {
    id: plan.id,
    nodes: plan.nodes.map((node) => node.id),
    state: 'RUNNING',
    open: plan.nodes.length,
    failed: 0,
    cancelled: false,
  });
}

/** A node's first outcome to apply along its edges: its letter's status and the JSON its flow entry keeps. */
export interface SettledNode {
  readonly id: string;
  readonly outcome: FlowOutcomeStatus;
  /** Undefined for a failure by a dependency: its error is checked by its shape (see `failedBy`). */
  readonly value: string | undefined;
}

/**
 * `settleFlowNodes` (flow-settle.lua): each node of `work`, in order, whose
 * `then` is still there records its first outcome in its flow (the flow
 * ends when it was the last open node) and applies it along its edges to
 * each dependent still WAITING, by `edgeEffect`: a dependent failed is
 * appended to `work` and settled in turn; one whose last pending
 * dependency settled, or one a `continue` edge readies, is READY (deferred
 * when delayed).
 */
export function settleFlowInModel(model: RunModel, work: SettledNode[]): void {
  const { flows } = model;
  for (let i = 0; i < work.length; i++) {
    const { id, outcome, value } = work[i]!;
    const node = flows.nodes.get(id)!;
    const dependents = node.dependents;
    if (dependents === undefined) continue;
    delete node.dependents;
    node.outcome = outcome;
    if (value !== undefined) node.value = value;
    const flow = flows.flows.get(node.flow)!;
    if (outcome !== 'SUCCESSFUL') flow.failed += 1;
    if (--flow.open === 0) endFlow(model, flow.id);
    for (const edge of dependents) {
      const dependent = flows.nodes.get(edge.id)!;
      if (dependent.status !== 'waiting') {
        if (outcome !== 'SUCCESSFUL') model.notes.push('flow: a failure reached a dependent no longer WAITING');
        continue;
      }
      const effect = edgeEffect(edge.onFailure, outcome);
      if (outcome !== 'SUCCESSFUL') {
        model.notes.push(`flow: a failure along an edge of policy ${edge.onFailure}`);
        model.notes.push(`flow: a dependency ${outcome} with a WAITING dependent`);
      }
      if (effect === 'fail') {
        work.push({ id: dependent.id, outcome: 'FAILED', value: failByDependency(model, dependent, id, outcome) });
        if (node.failedBy) model.notes.push('flow: a dependency failure cascaded');
      } else if (effect === 'ready') {
        readyNode(dependent);
        if (dependent.pending! > 1) model.notes.push('flow: a node readied by continue, other dependencies pending');
        delete dependent.pending;
      } else if (--dependent.pending! <= 0) {
        readyNode(dependent);
        delete dependent.pending;
        model.notes.push('flow: a node readied by its last dependency');
      }
    }
  }
}

function readyNode(node: ModelFlowNode): void {
  node.status = node.delayed ? 'deferred' : 'ready';
}

/**
 * `failFlowNode`: a WAITING dependent ends FAILED, uncharged, in its queue's
 * failed index; its error (the flow entry's JSON, checked by its shape)
 * names the dependency and how it ended.
 */
function failByDependency(model: RunModel, node: ModelFlowNode, depId: string, outcome: FlowOutcomeStatus): undefined {
  node.status = 'failed';
  delete node.pending;
  node.failedBy = { id: depId, outcome };
  count(model.flows, node.queue, 'failed');
  publish(model, node.id, 'FAILED');
  model.notes.push('flow: a node failed by a dependency');
  return undefined;
}

function endFlow(model: RunModel, id: string): void {
  const flow = model.flows.flows.get(id)!;
  flow.state = finishedFlowState(flow.cancelled, flow.failed);
  model.notes.push(`flow ended ${flow.state}`);
}

/** Whether `lease` is the current lease of its node. */
export function holdsNode(flows: FlowModel, lease: NodeLeaseRef): boolean {
  const node = flows.nodes.get(lease.id);
  return node?.queue === lease.queue && node.status === 'running' && node.lease!.token === lease.token;
}

/**
 * A claim of flow queues (`claim.lua`, no limits): the rotation
 * (`rotateClaim`) takes each queue's READY nodes in score order, a share at
 * a time. Asserts that `claimed` is what it predicts, under a token never
 * granted before, each its node's next attempt; then leases them.
 */
export function claimNodesInModel(
  model: RunModel,
  queues: readonly FlowQueue[],
  want: number,
  offset: number,
  worker: string,
  claimed: ClaimedRuns,
): void {
  const { flows } = model;
  const order = queues.map((queue) =>
    nodesIn(flows, queue, 'ready')
      .sort((a, b) => nodeScore(a) - nodeScore(b))
      .map((node) => node.id),
  );
  const leased: string[][] = queues.map(() => []);
  const { next } = rotateClaim(
    queues.map(() => true),
    want,
    offset,
    (q, share) => {
      const popped = order[q]!.splice(0, share);
      leased[q]!.push(...popped);
      return [popped.length, popped.length === share];
    },
  );
  const ids = claimed.map((run) => `${run.queue}/${run.id}`).join(', ');
  queues.forEach((queue, q) => {
    const got = claimed.filter((run) => run.queue === queue).map((run) => run.id);
    assert.deepEqual(got, leased[q], `the nodes of ${queue} a claim of ${want} from ${queues} leased, of [${ids}]`);
  });
  assert.equal(claimed.length, leased.flat().length, `a claim of ${want} nodes leased [${ids}]`);
  assert.equal(claimed.next, next, `where the rotation of a claim of ${want} from ${queues} @${offset} stopped`);
  const token = claimed[0]?.token;
  if (token !== undefined) {
    assert.ok(!model.tokens.has(token), `lease token ${token} was granted before`);
    model.tokens.add(token);
  }
  for (const run of claimed) {
    const node = flows.nodes.get(run.id)!;
    assert.equal(run.token, token, 'one token per claim');
    assert.equal(run.attempts, node.charged + 1, `attempt of ${run.id}`);
    assert.equal(run.recoveries ?? 0, 0, `recoveries of ${run.id}`);
    node.status = 'running';
    node.lease = { token: run.token, worker, started: false };
    flows.leases.push({ id: run.id, queue: node.queue, token: run.token });
  }
}

/** Start marks (`acknowledge` with marks only): recorded for each lease that holds. */
export function startNodesInModel(flows: FlowModel, leases: readonly NodeLeaseRef[]): void {
  for (const lease of leases) if (holdsNode(flows, lease)) flows.nodes.get(lease.id)!.lease!.started = true;
}

/** The JSON a flow entry keeps of an outcome: a success's return value, a failure's or quarantine's error. */
function entryValue(outcome: Outcome): string {
  if (outcome.kind === 'successful') return outcome.returnValue ?? '';
  return 'error' in outcome && outcome.error ? JSON.stringify(outcome.error) : '';
}

const SETTLED: Record<Exclude<Outcome['kind'], 'retry'>, { status: NodeStatus; outcome: FlowOutcomeStatus }> = {
  successful: { status: 'successful', outcome: 'SUCCESSFUL' },
  failed: { status: 'failed', outcome: 'FAILED' },
  quarantine: { status: 'quarantined', outcome: 'QUARANTINED' },
};

/**
 * One acknowledge call of nodes' outcomes, in order: each applies while its
 * lease holds (charged, into its segment, counted), else is stale (counted
 * in `staleAcks`). Then (`effect-flow.lua`) the first outcome of each node
 * settled (not a retry) goes along its edges, in the call's order.
 */
export function acknowledgeNodesInModel(
  model: RunModel,
  outcomes: readonly { lease: NodeLeaseRef; outcome: Outcome }[],
): boolean[] {
  const { flows } = model;
  const work: SettledNode[] = [];
  const applied = outcomes.map(({ lease, outcome }) => {
    if (!holdsNode(flows, lease)) {
      count(flows, lease.queue, 'staleAcks');
      return false;
    }
    const node = flows.nodes.get(lease.id)!;
    node.charged += 1;
    delete node.lease;
    count(flows, node.queue, OUTCOME_COUNTER[outcome.kind]);
    if (outcome.kind === 'retry') {
      node.status = outcome.delayMs > 0 ? 'deferred' : 'ready';
      return true;
    }
    const { status, outcome: settled } = SETTLED[outcome.kind];
    node.status = status;
    if (status === 'successful') node.succeededSeq = ++flows.successes;
    publish(model, node.id, statusText(status));
    work.push({ id: node.id, outcome: settled, value: entryValue(outcome) });
    if (node.dependents === undefined) model.notes.push('flow: a requeued node settled alone');
    return true;
  });
  settleFlowInModel(model, work);
  return applied;
}

/** Takes a node out for a cancel (`takeForCancel`): its lease revoked (a recorded start charged), or its set left. */
function takeForCancel(model: RunModel, node: ModelFlowNode): void {
  if (node.lease?.started) node.charged += 1;
  delete node.lease;
  delete node.pending;
  node.status = 'cancelled';
  count(model.flows, node.queue, 'cancelled');
  publish(model, node.id, 'CANCELLED');
}

/**
 * `cancel.lua` of a node: a WAITING, READY or RUNNING node of `queue` ends
 * CANCELLED, and its outcome goes along its edges; anything else is refused
 * as it is ('' when the queue has no such run).
 */
export function cancelNodeInModel(
  model: RunModel,
  id: string,
  queue: FlowQueue,
): { cancelled: boolean; status: string } {
  const node = model.flows.nodes.get(id);
  if (node?.queue !== queue || node.status === 'gone') return { cancelled: false, status: '' };
  const status = statusText(node.status);
  if (!cancellable(status)) return { cancelled: false, status };
  model.notes.push(`flow: a ${status} node cancelled`);
  takeForCancel(model, node);
  settleFlowInModel(model, [{ id, outcome: 'CANCELLED', value: '' }]);
  return { cancelled: true, status };
}

/**
 * `dequeue.lua` of a node: a WAITING or READY node of `queue` is removed
 * (its run hash goes), counting as CANCELLED for its flow, whose edges
 * apply it; anything else is refused as it is.
 */
export function dequeueNodeInModel(
  model: RunModel,
  id: string,
  queue: FlowQueue,
): { removed: boolean; status: string } {
  const node = model.flows.nodes.get(id);
  if (node?.queue !== queue || node.status === 'gone') return { removed: false, status: '' };
  const status = statusText(node.status);
  if (!dequeueable(status)) return { removed: false, status };
  model.notes.push(`flow: a ${status} node dequeued`);
  settleFlowInModel(model, [{ id, outcome: 'CANCELLED', value: '' }]);
  node.status = 'gone';
  delete node.pending;
  count(model.flows, queue, 'dequeued');
  publish(model, id, 'removed:dequeued');
  return { removed: true, status };
}

/**
 * `requeue.lua` of a node: a FAILED, QUARANTINED or CANCELLED node goes back
 * to READY at its place; its edges were applied with its first outcome, so
 * it runs again alone.
 */
export function requeueNodeInModel(
  model: RunModel,
  id: string,
  queue: FlowQueue,
): { requeued: boolean; status: string } {
  const node = model.flows.nodes.get(id);
  if (node?.queue !== queue || node.status === 'gone') return { requeued: false, status: '' };
  const status = statusText(node.status);
  if (!requeueable(status)) return { requeued: false, status };
  node.status = 'ready';
  count(model.flows, queue, 'requeued');
  model.notes.push('flow: a settled node requeued');
  return { requeued: true, status };
}

/**
 * `flow-cancel.lua`: a flow not finished is marked cancelled, and each of
 * its open nodes ends CANCELLED without applying its edges (its dependents
 * are cancelled with it); the flow ends CANCELLED. Returns how many nodes
 * the call cancelled and the state after (null: no such flow).
 */
export function cancelFlowInModel(model: RunModel, id: string): { cancelled: number; state: FlowState | null } {
  const flow = model.flows.flows.get(id);
  if (!flow) return { cancelled: 0, state: null };
  if (flow.state !== 'RUNNING') return { cancelled: 0, state: flow.state };
  flow.cancelled = true;
  let cancelled = 0;
  for (const nodeId of flow.nodes) {
    const node = model.flows.nodes.get(nodeId)!;
    if (node.outcome !== undefined) continue;
    model.notes.push(`flow cancel: a ${statusText(node.status)} node cancelled`);
    takeForCancel(model, node);
    delete node.dependents;
    node.outcome = 'CANCELLED';
    node.value = '';
    flow.failed += 1;
    cancelled += 1;
    if (--flow.open === 0) endFlow(model, id);
  }
  return { cancelled, state: flow.state };
}
