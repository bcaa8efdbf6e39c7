import assert from 'node:assert/strict';
import { FLOW_QUEUES, nodesWith, type FlowQueue, type NodeStatus } from './flow-model.js';
import {
  acknowledgeNodesInModel,
  cancelFlowInModel,
  cancelNodeInModel,
  claimNodesInModel,
  dequeueNodeInModel,
  requeueNodeInModel,
} from './flow-transitions.js';
import { OUTCOMES } from './lease-commands.js';
import { ModelCommand } from './model-command.js';
import type { ModelRig, Via } from './redis-rig.js';
import { nth, type RunModel } from './run-model.js';

/**
 * Operators' commands on flows: cancels, dequeues and requeues of a node,
 * and cancels of a whole flow, each answer checked against the model
 * (`flow-transitions.ts`).
 */

/**
 * Which node an operator's call names: one it may act on (`leased`: a
 * RUNNING one, when there is one), any node, or a node named in the other
 * flow queue.
 */
export type NodeTarget = 'fitting' | 'leased' | 'any' | 'other queue';

function targetNode(
  model: RunModel,
  fitting: NodeStatus[],
  how: NodeTarget,
  n: number,
): { id: string; queue: FlowQueue } {
  const leased = how === 'leased' ? nodesWith(model.flows, 'running') : [];
  if (leased.length > 0) return nth(leased, n);
  const nodes = nodesWith(model.flows, ...fitting);
  const node =
    how !== 'any' && how !== 'other queue' && nodes.length > 0
      ? nth(nodes, n)
      : nth([...model.flows.nodes.values()], n);
  return { id: node.id, queue: how === 'other queue' ? FLOW_QUEUES.find((q) => q !== node.queue)! : node.queue };
}

/** Cancels a node (WAITING, READY or RUNNING: its outcome goes along its edges); anything else is refused. */
export class CancelNodeCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly how: NodeTarget,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'cancel a flow node, reply lost' : 'cancel a flow node';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.nodes.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { id, queue } = targetNode(model, ['waiting', 'ready', 'deferred', 'running'], this.how, this.pick);
    const answer = await rig.via(this.through, 'cancel', (backend) => backend.cancel(id, queue));
    assert.deepEqual(answer, cancelNodeInModel(model, id, queue), `cancel of node ${id} in ${queue}`);
  }

  toString(): string {
    return `cancelNode[${this.through}](#${this.pick}, ${this.how})`;
  }
}

/** Dequeues a node (WAITING or READY: it counts as CANCELLED for its flow); anything else is refused. */
export class DequeueNodeCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly how: NodeTarget,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'dequeue a flow node, reply lost' : 'dequeue a flow node';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.nodes.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { id, queue } = targetNode(model, ['waiting', 'ready', 'deferred'], this.how, this.pick);
    const answer = await rig.via(this.through, 'dequeue', (backend) => backend.dequeue(id, queue));
    assert.deepEqual(answer, dequeueNodeInModel(model, id, queue), `dequeue of node ${id} from ${queue}`);
  }

  toString(): string {
    return `dequeueNode[${this.through}](#${this.pick}, ${this.how})`;
  }
}

/**
 * Requeues a FAILED, QUARANTINED or CANCELLED node: READY again, it runs
 * alone (its edges were applied with its first outcome). Then maybe it runs:
 * a claim of every READY node of its queue, each succeeding.
 */
export class RequeueNodeCommand extends ModelCommand {
  protected readonly kind = 'requeue a flow node';

  constructor(
    readonly pick: number,
    readonly thenRun: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.nodes.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { id, queue } = targetNode(model, ['failed', 'quarantined', 'cancelled'], 'fitting', this.pick);
    const answer = await rig.backend.requeue(id, queue);
    assert.deepEqual(answer, requeueNodeInModel(model, id, queue), `requeue of node ${id} in ${queue}`);
    if (!this.thenRun || !answer.requeued) return;
    const worker = 'host-f:5:0';
    const count = nodesWith(model.flows, 'ready').filter((node) => node.queue === queue).length;
    const claimed = await rig.backend.claim([queue], count, worker, 0);
    claimNodesInModel(model, [queue], count, 0, worker, claimed);
    const outcomes = claimed.map((run) => ({
      lease: { id: run.id, queue, token: run.token },
      outcome: OUTCOMES.successful,
    }));
    const applied = await rig.backend.acknowledge(outcomes.map(({ lease, outcome }) => ({ ...lease, outcome })));
    assert.deepEqual(applied, acknowledgeNodesInModel(model, outcomes), `the outcomes of the nodes of ${queue}`);
  }

  toString(): string {
    return `requeueNode(#${this.pick}${this.thenRun ? ', then run' : ''})`;
  }
}

/**
 * Cancels a flow (mostly a running one, with a leased node when one has; or
 * any, or an unknown id), maybe once a claim leased some nodes: its open
 * nodes end CANCELLED, their edges unapplied, and it ends CANCELLED. The
 * script keeps no record of its answer: a lost reply's resent copy finds the
 * flow ended, cancels nothing, and answers so.
 */
export class CancelFlowCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly how: 'running' | 'any' | 'unknown',
    readonly claimFirst: boolean,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'cancel a flow, reply lost' : 'cancel a flow';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.flows.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    if (this.claimFirst) {
      // Some nodes run while their flow is cancelled.
      const claimed = await rig.backend.claim(FLOW_QUEUES, 2, 'host-f:6:0', 0);
      claimNodesInModel(model, FLOW_QUEUES, 2, 0, 'host-f:6:0', claimed);
    }
    const flows = [...model.flows.flows.values()];
    // A running flow: one with a leased node, when there is one.
    const leased = new Set(nodesWith(model.flows, 'running').map((node) => node.flow));
    const running = flows.filter((flow) => flow.state === 'RUNNING' && leased.has(flow.id));
    if (running.length === 0) running.push(...flows.filter((flow) => flow.state === 'RUNNING'));
    const id =
      this.how === 'unknown'
        ? `F-unknown-${this.pick}`
        : nth(this.how === 'running' && running.length > 0 ? running : flows, this.pick).id;
    const answer = await rig.via(this.through, 'flowCancel', (backend) => backend.flows.cancel(id));
    const first = cancelFlowInModel(model, id);
    // The resent copy runs after the first: what the first left answers it.
    const expected = this.through === 'lost' ? cancelFlowInModel(model, id) : first;
    assert.deepEqual(answer, expected, `cancel of flow ${id}`);
  }

  toString(): string {
    return `cancelFlow[${this.through}](#${this.pick}, ${this.how}${this.claimFirst ? ', nodes claimed first' : ''})`;
  }
}
