import type { FlowEdge, FlowOutcomeStatus, FlowState } from '../../../libs/threadmill/src/records/flow-records.js';
import type { QueueStats, RunStatus } from './run-model.js';

/**
 * Flows in the model (`docs/flows.md`; the layout in
 * `lua/includes/flow-settle.lua`): what each flow's hash and each node's run
 * hash hold, and which of its queue's sets a node is in. The rules a
 * dependency's outcome follows along an edge are the library's
 * (`libs/threadmill/src/rules/flow-rules.ts`), applied by
 * `flow-transitions.ts`; this file holds the state they act on.
 *
 * Flow nodes live in queues of their own ({@link FLOW_QUEUES}), which the
 * run model's commands (claims, purges, broker passes, clock steps) never
 * name: the flow commands alone claim, settle, cancel and dequeue them, so
 * the run model's transitions need no flow effects. A restart from a
 * snapshot brings flows back with the runs (`snapshotFlows`).
 */

export const FLOW_QUEUES = ['f1', 'f2'] as const;
export type FlowQueue = (typeof FLOW_QUEUES)[number];

/** Where a node is: a run's segment, or gone (dequeued: its run hash deleted, its flow entry kept). */
export type NodeStatus = RunStatus | 'gone';

/** A lease of a node as its holder knows it. */
export interface NodeLeaseRef {
  readonly id: string;
  readonly queue: FlowQueue;
  readonly token: string;
}

/** A flow node's lease, as the leases hash holds it. */
export interface NodeLease {
  readonly token: string;
  readonly worker: string;
  /** Its start recorded (a start mark): a cancel then charges the attempt. */
  started: boolean;
}

export interface ModelFlowNode {
  readonly id: string;
  readonly flow: string;
  readonly name: string;
  readonly queue: FlowQueue;
  readonly priority: number;
  /** The `seq` part of its ready score, from the store call (`flow-store.lua`: seq + n). */
  readonly seq: number;
  /** Stored with a delay: its run hash holds `runAfter`, so readying it defers it. */
  readonly delayed: boolean;
  /** Its dependencies, in its `e:` field's order. */
  readonly after: readonly FlowEdge[];
  /** Its run hash's `then` (its dependents, in store order); undefined once its first outcome took it. */
  dependents?: FlowEdge[];
  status: NodeStatus;
  /** Its run hash's `pending`: dependencies not settled yet, while WAITING. */
  pending?: number;
  lease?: NodeLease;
  /** Attempts settled (its run hash's `attempts`). */
  charged: number;
  /** Its first outcome and its JSON, as its flow's `n:` entry holds them. */
  outcome?: FlowOutcomeStatus;
  value?: string;
  /** Failed by a dependency's edge: which dependency, ending how (its error names them). */
  failedBy?: { readonly id: string; readonly outcome: FlowOutcomeStatus };
  /** Its place in the order nodes succeeded: its queue's successful list's. */
  succeededSeq?: number;
}

export interface ModelFlow {
  readonly id: string;
  /** Its nodes' ids, in store order. */
  readonly nodes: readonly string[];
  state: FlowState;
  /** Nodes without an outcome. */
  open: number;
  /** Outcomes other than a success. */
  failed: number;
  /** Its `cancelled` flag: a flow cancel found it running. */
  cancelled: boolean;
}

/** The flows of a sequence, as Redis holds them (restored with a snapshot), and what no restore forgets. */
export interface FlowModel {
  flows: Map<string, ModelFlow>;
  nodes: Map<string, ModelFlowNode>;
  /** The flow queues' counters. */
  stats: Record<FlowQueue, QueueStats>;
  /** Flow queues whose `flowed` flag is set. */
  flowed: Set<FlowQueue>;
  /** Every lease of a node ever granted, current or superseded (a restore does not forget them). */
  leases: NodeLeaseRef[];
  /** The model's flow counter: never rolled back, so a new flow's ids are new after a restore too. */
  next: number;
  /** Successes so far (the successful lists' order); never rolled back. */
  successes: number;
}

export function emptyFlows(): FlowModel {
  return {
    flows: new Map(),
    nodes: new Map(),
    stats: { f1: {}, f2: {} },
    flowed: new Set(),
    leases: [],
    next: 0,
    successes: 0,
  };
}

/** What a snapshot keeps of the flows: everything Redis holds. */
export type FlowSnapshot = Pick<FlowModel, 'flows' | 'nodes' | 'stats' | 'flowed'>;

export function snapshotFlows(flows: FlowModel): FlowSnapshot {
  return structuredClone({ flows: flows.flows, nodes: flows.nodes, stats: flows.stats, flowed: flows.flowed });
}

/** The flows as Redis holds them again after a restart from `snapshot`; leases granted since are superseded. */
export function restoredFlows(flows: FlowModel, snapshot: FlowSnapshot): FlowModel {
  return { ...flows, ...structuredClone(snapshot) };
}

/** The nodes of `queue` in `status`. */
export function nodesIn(flows: FlowModel, queue: FlowQueue, status: NodeStatus): ModelFlowNode[] {
  return [...flows.nodes.values()].filter((node) => node.queue === queue && node.status === status);
}

/** The nodes in any of `statuses`, in a stable order for picks. */
export function nodesWith(flows: FlowModel, ...statuses: NodeStatus[]): ModelFlowNode[] {
  return [...flows.nodes.values()].filter((node) => statuses.includes(node.status));
}

/** The current leases of nodes, as their holders know them. */
export function currentNodeLeases(flows: FlowModel): NodeLeaseRef[] {
  return nodesWith(flows, 'running').map((node) => ({ id: node.id, queue: node.queue, token: node.lease!.token }));
}
