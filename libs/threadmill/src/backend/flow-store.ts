import type { LeaseRef } from '../records/backend-records.js';
import type { FlowState, NewFlow, NewFlowNode, StoredDependency, StoredFlow } from '../records/flow-records.js';

export type * from '../records/flow-records.js';

/**
 * The flows of a backend (`docs/flows.md`): nodes that are runs, stored at
 * once, each made READY when its dependencies have settled as its edges say.
 * Settling a node's dependents is the backend's own work, in the call that
 * settles the node (an acknowledgement, a cancel, a dequeue); this store
 * holds what callers do to a flow as a whole.
 */
export interface FlowStore {
  /**
   * Stores a flow: every node or, when the call fails, none a claim can
   * reach (a large flow goes in parts, none of whose nodes runs before the
   * last part is stored). `created` is false when the flow id was stored
   * already (a resent call), and nothing was written.
   */
  store(flow: NewFlow): Promise<{ now: number; created: boolean }>;
  /** The flow's record (its nodes with their first outcomes), or null when no flow has this id (or it expired). */
  load(id: string): Promise<StoredFlow | null>;
  /** What the dependencies of flow node `runId` ended with; [] for a run that is no flow node. */
  dependencies(runId: string): Promise<StoredDependency[]>;
  /**
   * Cancels a flow: each node without an outcome ends CANCELLED (a running
   * one's lease is revoked, as `cancel` does), in bounded calls. Returns how
   * many this call cancelled and the flow's state after (null: no such flow).
   */
  cancel(id: string): Promise<{ cancelled: number; state: FlowState | null }>;
  /**
   * Adds nodes to the flow of the running node `caller`, under its lease:
   * each runs now (its `after` is ignored), and every dependent of the
   * caller still WAITING waits for it too, by the policy of its edge from
   * the caller. `added`; `lost` when the caller's lease no longer holds;
   * `not-a-node` when the caller is no flow node. Nothing is written unless added.
   */
  extend(caller: LeaseRef, nodes: readonly NewFlowNode[]): Promise<'added' | 'lost' | 'not-a-node'>;
}
