import type { NewRun } from './backend-records.js';

/**
 * What a dependency's failure does to its dependent (the edge's policy;
 * `docs/flows.md`, "Failure policies"). A failure here is any outcome but a
 * success: FAILED, QUARANTINED or CANCELLED.
 *
 * - `fail` (the default): the dependent ends FAILED without running
 *   (uncharged), and its own dependents are settled by their edges in turn;
 * - `ignore`: the edge counts as settled; the dependent runs once its other
 *   dependencies settle, and sees the failure in `context.dependencies()`;
 * - `continue`: the dependent is made READY at once, its other dependencies
 *   still pending, and sees the failure;
 * - `remove`: the edge counts as settled and the dependency is left out of
 *   what `context.dependencies()` lists.
 */
export type FailurePolicy = 'fail' | 'ignore' | 'continue' | 'remove';

/** The policies, in the order of their one-letter codes in storage. */
export const FAILURE_POLICIES: readonly FailurePolicy[] = ['fail', 'ignore', 'continue', 'remove'];

/** A node's dependency on another node of its flow. */
export interface FlowEdge {
  /** The run id of the dependency. */
  readonly id: string;
  readonly onFailure: FailurePolicy;
}

/** A node of a new flow: a new run, its name in the flow, and its dependencies. */
export interface NewFlowNode {
  readonly run: NewRun;
  readonly name: string;
  /** Nodes stored before it (earlier in the flow's `nodes`). */
  readonly after: readonly FlowEdge[];
}

/** A new flow: its nodes in an order where every dependency comes before its dependents. */
export interface NewFlow {
  readonly id: string;
  readonly nodes: readonly NewFlowNode[];
}

/** Where a flow is: STAGING while a large flow is still being stored (none of its nodes runs), then RUNNING, then its end. */
export type FlowState = 'STAGING' | 'RUNNING' | 'SUCCESSFUL' | 'FAILED' | 'CANCELLED';

/** The first outcome of a flow node, as its flow recorded it (what its dependents read). */
export type FlowOutcomeStatus = 'SUCCESSFUL' | 'FAILED' | 'QUARANTINED' | 'CANCELLED';

/** A node as its flow's record holds it. */
export interface StoredFlowNode {
  readonly id: string;
  readonly name: string;
  readonly queue: string;
  readonly after: readonly FlowEdge[];
  /** Its first outcome, once it has one. */
  readonly outcome?: FlowOutcomeStatus;
  /** The outcome's JSON: the return value of a success ('' for none), the error of a failure. */
  readonly value?: string;
}

/** A flow as stored: counts, state and nodes (their live runs are read apart: `TaskInspector.flow`). */
export interface StoredFlow {
  readonly id: string;
  readonly state: FlowState;
  readonly createdAt: number;
  readonly finishedAt?: number;
  /** Nodes without an outcome. */
  readonly open: number;
  readonly nodes: readonly StoredFlowNode[];
}

/** One dependency of a node, as `context.dependencies()` reads it. */
export interface StoredDependency {
  readonly id: string;
  readonly name: string;
  readonly onFailure: FailurePolicy;
  /** Undefined while it has no outcome (a `continue` edge readies its dependent before the others settle). */
  readonly outcome?: FlowOutcomeStatus;
  readonly value?: string;
}
