import { taskResultFromStored } from '../codec/task-result.factory.js';
import type { StoredRun } from '../records/backend-records.js';
import type { FailurePolicy, FlowState, StoredFlow, StoredFlowNode } from '../records/flow-records.js';
import { TaskStatus } from '../records/task-status.enum.js';

/** A dependency of a flow node, as {@link FlowNodeView.after} lists it. */
export interface FlowNodeDependency {
  /** The dependency's run id. */
  readonly id: string;
  /** Its name in the flow. */
  readonly name: string;
  /** What its failure does to the dependent (`docs/flows.md`, "Failure policies"). */
  readonly onFailure: FailurePolicy;
}

/** One node of a flow as {@link FlowView} shows it: the flow's record of it, with its run's live state. */
export interface FlowNodeView {
  /** The node's run id. */
  readonly id: string;
  /** Its name in the flow. */
  readonly name: string;
  readonly queue: string;
  /** Its task's name; null once its run record is gone (trimmed, or dequeued). */
  readonly task: string | null;
  /**
   * Its run's status now (WAITING while its dependencies have not settled);
   * once its run record is gone, the first outcome its flow recorded; null
   * when neither is known (its run was purged before it ended).
   */
  readonly status: TaskStatus | null;
  /** Whether `status`, `task`, the times and `attempts` were read from its run record (false: the record is gone). */
  readonly live: boolean;
  /** Its dependencies, in the order the flow gave them. */
  readonly after: readonly FlowNodeDependency[];
  /** Its place in the graph: 0 for a node without dependencies, else one more than its deepest dependency. */
  readonly depth: number;
  readonly enqueuedAt: Date | null;
  /** When its first attempt was claimed. */
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  /** Attempts so far; null once its run record is gone. */
  readonly attempts: number | null;
}

/** A flow as `TaskInspector.flow` shows it: its state, its nodes' live statuses, and its graph. */
export interface FlowView {
  readonly id: string;
  readonly state: FlowState;
  readonly createdAt: Date;
  /** When its last open node settled; null while it runs. */
  readonly finishedAt: Date | null;
  /** Nodes by status (statuses no node has are left out; a node of unknown status is not counted). */
  readonly counts: Readonly<Partial<Record<TaskStatus, number>>>;
  /** Every node, each after all its dependencies: by depth, then by id. */
  readonly nodes: readonly FlowNodeView[];
  /** Dependencies between nodes, counted once per edge. */
  readonly edges: number;
}

/**
 * The depth of each node (0 without dependencies, else one more than its
 * deepest dependency), by Kahn's walk of the graph. An edge to an id that is
 * no node of the flow does not count; a node the walk cannot reach (a cycle,
 * which a stored flow never has) is placed one level below the deepest node.
 */
export function flowDepths(nodes: readonly Pick<StoredFlowNode, 'id' | 'after'>[]): Map<string, number> {
  const known = new Set(nodes.map((node) => node.id));
  const dependents = new Map<string, string[]>();
  const pending = new Map<string, number>();
  for (const node of nodes) {
    const dependencies = new Set(node.after.map((edge) => edge.id).filter((id) => known.has(id) && id !== node.id));
    pending.set(node.id, dependencies.size);
    for (const dependency of dependencies) {
      const list = dependents.get(dependency);
      if (list) list.push(node.id);
      else dependents.set(dependency, [node.id]);
    }
  }
  const depths = new Map<string, number>();
  const queue = nodes.filter((node) => pending.get(node.id) === 0).map((node) => node.id);
  for (const id of queue) depths.set(id, 0);
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i]!;
    const depth = depths.get(id)!;
    for (const dependent of dependents.get(id) ?? []) {
      depths.set(dependent, Math.max(depths.get(dependent) ?? 0, depth + 1));
      const left = pending.get(dependent)! - 1;
      pending.set(dependent, left);
      if (left === 0) queue.push(dependent);
    }
  }
  if (queue.length < nodes.length) {
    const reached = new Set(queue);
    const below = queue.reduce((deepest, id) => Math.max(deepest, depths.get(id)!), -1) + 1;
    for (const node of nodes) if (!reached.has(node.id)) depths.set(node.id, below);
  }
  return depths;
}

/** The view of a node whose run record is `fields` (null once it is gone). */
function nodeView(
  node: StoredFlowNode,
  fields: StoredRun | null,
  depth: number,
  nameOf: ReadonlyMap<string, string>,
): FlowNodeView {
  const after = node.after.map((edge) => ({
    id: edge.id,
    name: nameOf.get(edge.id) ?? edge.id,
    onFailure: edge.onFailure,
  }));
  const base = { id: node.id, name: node.name, queue: node.queue, after, depth };
  if (!fields) {
    const status = node.outcome === undefined ? null : TaskStatus[node.outcome];
    return {
      ...base,
      task: null,
      status,
      live: false,
      enqueuedAt: null,
      startedAt: null,
      finishedAt: null,
      attempts: null,
    };
  }
  const run = taskResultFromStored(node.id, fields);
  return {
    ...base,
    task: run.taskName,
    status: run.status,
    live: true,
    enqueuedAt: run.enqueuedAt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    attempts: run.attempts,
  };
}

/**
 * Assembles the view of `flow` from its record and its nodes' run records
 * (`records[i]` of `flow.nodes[i]`, null where a run is gone).
 */
export function assembleFlowView(flow: StoredFlow, records: readonly (StoredRun | null)[]): FlowView {
  const depths = flowDepths(flow.nodes);
  const nameOf = new Map(flow.nodes.map((node) => [node.id, node.name]));
  const nodes = flow.nodes
    .map((node, i) => nodeView(node, records[i] ?? null, depths.get(node.id)!, nameOf))
    .sort((a, b) => a.depth - b.depth || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const counts: Partial<Record<TaskStatus, number>> = {};
  for (const node of nodes) if (node.status !== null) counts[node.status] = (counts[node.status] ?? 0) + 1;
  return {
    id: flow.id,
    state: flow.state,
    createdAt: new Date(flow.createdAt),
    finishedAt: flow.finishedAt === undefined ? null : new Date(flow.finishedAt),
    counts,
    nodes,
    edges: flow.nodes.reduce((total, node) => total + node.after.length, 0),
  };
}
