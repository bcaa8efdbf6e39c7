import assert from 'node:assert/strict';
import type { Acknowledgement } from '../../../libs/threadmill/src/backend/task-backend.js';
import type { FailurePolicy, NewFlow } from '../../../libs/threadmill/src/records/flow-records.js';
import { assertFlows } from './flow-check.js';
import { currentNodeLeases, FLOW_QUEUES, nodesWith, type FlowQueue, type NodeLeaseRef } from './flow-model.js';
import {
  acknowledgeNodesInModel,
  claimNodesInModel,
  startNodesInModel,
  storeFlowInModel,
  type PlannedFlow,
} from './flow-transitions.js';
import { OUTCOMES } from './lease-commands.js';
import type { OutcomeKind } from './lease-transitions.js';
import { ModelCommand } from './model-command.js';
import type { ModelRig, Via } from './redis-rig.js';
import { DEFER_MS, nth, TASK, type RunModel } from './run-model.js';

/**
 * Commands of flows (`docs/flows.md`), on the flow queues alone: a random
 * small DAG stored (its reply lost, or not); claims of its READY nodes;
 * their outcomes (success, failure, quarantine, retry) in any order, from
 * current or superseded leases (operators' commands: `flow-operator-commands.ts`).
 * Each answer is checked against the model (`flow-transitions.ts`), and the
 * flows against Redis after every step (`flow-check.ts`).
 */

/** How long a node's registration lasts: far longer than a sequence. */
const REGISTRATION_MS = 10 * 60_000;

/** A node of a random DAG: its queue and priority, and edges to earlier nodes (picks wrap). */
export interface NodeSpec {
  readonly queue: FlowQueue;
  readonly priority: number;
  readonly delayed: boolean;
  /** Registered for waiting once stored: its settling or removal is published. */
  readonly watched: boolean;
  readonly after: readonly { readonly pick: number; readonly onFailure: FailurePolicy }[];
}

/** Names in the characters a node name may hold (`[A-Za-z0-9_.:-]`). */
const NAMES = ['a', 'b.1', 'c:2', 'D-3', 'e_4', 'f5', 'g.h:6', 'Z-7'];

/** The flow `specs` describe, with new ids: each node's edges go to distinct earlier nodes. */
function planFlow(model: RunModel, specs: readonly NodeSpec[]): PlannedFlow {
  const id = `F${model.flows.next++}`;
  const ids = specs.map((_, i) => `${id}n${i}`);
  return {
    id,
    nodes: specs.map((spec, i) => {
      // The first edge to a node counts; the first node has none.
      const after = new Map<string, FailurePolicy>();
      for (const edge of i > 0 ? spec.after : []) {
        const dep = ids[edge.pick % i]!;
        if (!after.has(dep)) after.set(dep, edge.onFailure);
      }
      return {
        id: ids[i]!,
        name: NAMES[i]!,
        queue: spec.queue,
        priority: spec.priority,
        delayed: spec.delayed,
        after: [...after].map(([dep, onFailure]) => ({ id: dep, onFailure })),
      };
    }),
  };
}

/** The backend's form of a planned flow. */
function newFlow(plan: PlannedFlow): NewFlow {
  return {
    id: plan.id,
    nodes: plan.nodes.map((node) => ({
      name: node.name,
      after: node.after,
      run: {
        id: node.id,
        queue: node.queue,
        priority: node.priority,
        runAt: 0,
        delayMs: node.delayed ? DEFER_MS : 0,
        leaseTtlMs: 0,
        payload: JSON.stringify({ v: 1, task: TASK, priority: node.priority, args: [] }),
        singleLine: true,
        idempotent: false,
      },
    })),
  };
}

const specsText = (specs: readonly NodeSpec[]): string =>
  specs
    .map(
      (s, i) =>
        `${i}:${s.queue}/p${s.priority}${s.delayed ? '/delayed' : ''}${s.watched ? '/watched' : ''}` +
        (i > 0 && s.after.length > 0 ? `<-[${s.after.map((e) => `${e.pick % i}${e.onFailure[0]}`).join(',')}]` : ''),
    )
    .join(' ');

/**
 * Stores a flow of 2..8 nodes, each depending on earlier ones under random
 * policies. A lost reply's resent copy finds the flow stored and answers
 * `created: false`, writing nothing again.
 */
export class EnqueueFlowCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly specs: readonly NodeSpec[],
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'enqueue a flow, reply lost' : 'enqueue a flow';
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const plan = planFlow(model, this.specs);
    const { created } = await rig.via(this.through, 'flowStore', (backend) => backend.flows.store(newFlow(plan)));
    assert.equal(created, this.through === 'direct', `flow ${plan.id} created (a resent copy creates nothing)`);
    storeFlowInModel(model, plan);
    rig.tally.stored += plan.nodes.length;
    const watched = plan.nodes.filter((_, i) => this.specs[i]!.watched).map((node) => node.id);
    if (watched.length === 0) return;
    const { states } = await rig.backend.watch(watched, REGISTRATION_MS);
    assert.deepEqual(
      states,
      watched.map(() => null),
      'a new flow node is pending',
    );
    for (const id of watched) model.watched.add(id);
  }

  toString(): string {
    return `enqueueFlow[${this.through}](${specsText(this.specs)})`;
  }
}

/** The flow queues a selector (0..3) names: one, the other, or both in either order. */
function flowQueuesOf(selector: number): FlowQueue[] {
  const [first, second] = FLOW_QUEUES;
  return [[first], [second], [first, second], [second, first]][selector % 4]!;
}

/** A claim of 1..4 READY nodes from the flow queues, its reply lost or not; then maybe their start marks. */
export class ClaimNodesCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly queues: number,
    readonly count: number,
    readonly offset: number,
    readonly started: boolean,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'claim flow nodes, reply lost' : 'claim flow nodes';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.nodes.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const queues = flowQueuesOf(this.queues);
    const worker = 'host-f:3:0';
    const claimed = await rig.via(this.through, 'claim', (backend) =>
      backend.claim(queues, this.count, worker, this.offset),
    );
    claimNodesInModel(model, queues, this.count, this.offset, worker, claimed);
    if (!this.started || claimed.length === 0) return;
    const leases = claimed.map(({ id, queue, token }) => ({ id, queue: queue as FlowQueue, token }));
    assert.deepEqual(await rig.backend.acknowledge([], leases), []);
    startNodesInModel(model.flows, leases);
  }

  toString(): string {
    const queues = flowQueuesOf(this.queues).join('+');
    return `claimNodes[${this.through}](${queues}, ${this.count}, @${this.offset}${this.started ? ', started' : ''})`;
  }
}

/** A node's outcome to send: of the current lease of some node, or (stale) of any lease ever granted. */
export interface NodeOutcome {
  readonly pick: number;
  readonly stale: boolean;
  readonly kind: OutcomeKind;
}

function leaseOf(model: RunModel, { pick, stale }: { pick: number; stale: boolean }): NodeLeaseRef {
  const current = currentNodeLeases(model.flows);
  return stale || current.length === 0 ? nth(model.flows.leases, pick) : nth(current, pick);
}

/**
 * One acknowledge call of 1..3 nodes' outcomes (or plain successes of every
 * node one claim leased): each applies while its lease holds, and a node's
 * first outcome goes along its edges (`effect-flow.lua`). A lost reply's
 * resent copy answers as its first did and applies nothing again.
 */
export class SettleNodesCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly outcomes: readonly NodeOutcome[],
    readonly wholeClaim: boolean,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'settle flow nodes, reply lost' : 'settle flow nodes';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.flows.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    let outcomes = this.outcomes.map((o) => ({ lease: leaseOf(model, o), outcome: OUTCOMES[o.kind] }));
    const current = currentNodeLeases(model.flows);
    if (this.wholeClaim && current.length > 0) {
      const { token } = nth(current, this.outcomes[0]!.pick);
      outcomes = current
        .filter((lease) => lease.token === token)
        .map((lease) => ({ lease, outcome: OUTCOMES.successful }));
    }
    const acks: Acknowledgement[] = outcomes.map(({ lease, outcome }) => ({ ...lease, outcome }));
    const applied = await rig.via(this.through, 'acknowledge', (backend) => backend.acknowledge(acks));
    const expected = acknowledgeNodesInModel(model, outcomes);
    const what = outcomes.map(({ lease, outcome }) => `${outcome.kind} ${lease.id}/${lease.token}`).join(', ');
    assert.deepEqual(applied, expected, `applied, of ${what}`);
    rig.tally.note('flow: stale outcome of a node discarded', expected.filter((ok) => !ok).length);
  }

  toString(): string {
    const outcomes = this.outcomes.map((o) => `${o.kind}#${o.pick}${o.stale ? '?' : ''}`).join(' ');
    return `settleNodes[${this.through}](${this.wholeClaim ? 'whole claim' : outcomes})`;
  }
}

/**
 * Runs the flows a while, as workers would: claims READY nodes of both
 * flow queues, two at a time, and settles each claim's nodes in a random
 * order with outcomes cycling through `kinds`, until no node is READY or
 * `rounds` claims ran; the flows are checked after each round.
 */
export class RunFlowsCommand extends ModelCommand {
  protected readonly kind = 'run flows';

  constructor(
    readonly kinds: readonly OutcomeKind[],
    readonly order: readonly number[],
    readonly rounds: number,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return nodesWith(model.flows, 'ready').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    let k = 0;
    for (let round = 0; round < this.rounds && nodesWith(model.flows, 'ready').length > 0; round++) {
      const queues = flowQueuesOf(round);
      const claimed = await rig.backend.claim(queues, 2, 'host-f:4:0', 0);
      claimNodesInModel(model, queues, 2, 0, 'host-f:4:0', claimed);
      const leases = claimed.map(({ id, queue, token }) => ({ id, queue: queue as FlowQueue, token }));
      // A random order of the claim's nodes.
      const shuffled = leases
        .map((lease, i) => ({ lease, key: this.order[(round + i) % this.order.length]! }))
        .sort((a, b) => a.key - b.key)
        .map(({ lease }) => ({ lease, outcome: OUTCOMES[this.kinds[k++ % this.kinds.length]!] }));
      const applied = await rig.backend.acknowledge(shuffled.map(({ lease, outcome }) => ({ ...lease, outcome })));
      assert.deepEqual(applied, acknowledgeNodesInModel(model, shuffled), 'the outcomes of the claimed nodes');
      for (const note of model.notes.splice(0)) rig.tally.note(note);
      await assertFlows(model, rig);
    }
  }

  toString(): string {
    return `runFlows(${this.kinds.join(' ')}; order ${this.order.join(',')}; ${this.rounds} rounds)`;
  }
}
