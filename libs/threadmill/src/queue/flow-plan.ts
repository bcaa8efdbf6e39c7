import { describeValue } from '../codec/describe-value.js';
import { FlowCycleError } from '../errors/flow-cycle.error.js';
import { InvalidFlowError } from '../errors/invalid-flow.error.js';
import { FAILURE_POLICIES, type FailurePolicy } from '../records/flow-records.js';
import type { EnqueueManyItem } from './enqueue-options.interface.js';
import type { FlowNodeSpec, FlowSpec } from './flow-options.interface.js';

/** A node name: the flow's own label for it, shown by inspectors and read by dependents. */
const NODE_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;
/** The keys a node takes beside its run's. */
const NODE_KEYS = new Set(['task', 'method', 'args', 'runAfter', 'delayMs', 'priority', 'queue', 'after']);
/** Run options a node may not set, and why. */
const REFUSED: Readonly<Record<string, string>> = {
  id: 'a flow names its nodes itself (their run ids come back by name)',
  dedupe: 'a deduplicated node could stand for a run outside its flow',
  partitionKey: 'a flow lives in one partition: give `partitionKey` to the flow, not to a node',
  waitable: 'every node of a flow may be waited for (`waitFor`, `waitForFlow`)',
};
/** The most nodes one flow may hold. */
export const MAX_FLOW_NODES = 100_000;

/** A node of a validated flow: its run item and its dependencies by name. */
export interface PlannedNode {
  readonly name: string;
  readonly item: EnqueueManyItem;
  readonly after: readonly { readonly name: string; readonly onFailure: FailurePolicy }[];
}

/**
 * Checks a flow and orders its nodes so that every dependency comes before
 * its dependents (the order the backend stores them in).
 * @throws InvalidFlowError naming what is wrong; FlowCycleError naming a cycle
 */
export function planFlow(spec: FlowSpec): PlannedNode[] {
  if (spec === null || typeof spec !== 'object' || spec.nodes === null || typeof spec.nodes !== 'object') {
    throw new InvalidFlowError(
      `a flow is an object { nodes: { <name>: { task, args, after? } } }, got ${describeValue(spec)}.`,
    );
  }
  for (const key of Object.keys(spec)) {
    if (key !== 'nodes' && key !== 'partitionKey') {
      throw new InvalidFlowError(`unknown option "${key}"; a flow takes nodes and partitionKey.`);
    }
  }
  const names = Object.keys(spec.nodes);
  if (names.length === 0) throw new InvalidFlowError('it has no nodes.');
  if (names.length > MAX_FLOW_NODES) {
    throw new InvalidFlowError(`it has ${names.length} nodes, more than the ${MAX_FLOW_NODES} a flow may hold.`);
  }
  const planned = new Map<string, PlannedNode>();
  for (const name of names) planned.set(name, planNode(name, spec.nodes[name]!, spec.nodes));
  return ordered(planned);
}

function planNode(name: string, node: FlowNodeSpec, nodes: FlowSpec['nodes']): PlannedNode {
  if (!NODE_NAME.test(name)) {
    throw new InvalidFlowError(
      `node name ${JSON.stringify(name)} is not 1 to 100 of the characters A-Z a-z 0-9 _ . : -.`,
    );
  }
  if (node === null || typeof node !== 'object') {
    throw new InvalidFlowError(`node "${name}" must be an object { task, args, after? }, got ${describeValue(node)}.`);
  }
  for (const key of Object.keys(node)) {
    if (REFUSED[key] !== undefined) throw new InvalidFlowError(`node "${name}" sets "${key}": ${REFUSED[key]}.`);
    if (!NODE_KEYS.has(key)) {
      throw new InvalidFlowError(
        `node "${name}" has an unknown option "${key}"; a node takes ${[...NODE_KEYS].join(', ')}.`,
      );
    }
  }
  const { after = [], ...item } = node;
  if (!Array.isArray(after)) {
    throw new InvalidFlowError(`node "${name}": after must be an array of node names, got ${describeValue(after)}.`);
  }
  const seen = new Set<string>();
  const edges = (after as readonly unknown[]).map((dependency) => {
    const edge = planEdge(name, dependency);
    if (!Object.hasOwn(nodes, edge.name)) {
      throw new InvalidFlowError(`node "${name}" waits for "${edge.name}", which is no node of the flow.`);
    }
    if (seen.has(edge.name)) throw new InvalidFlowError(`node "${name}" lists "${edge.name}" twice in after.`);
    seen.add(edge.name);
    return edge;
  });
  return { name, item: item as EnqueueManyItem, after: edges };
}

function planEdge(name: string, dependency: unknown): { name: string; onFailure: FailurePolicy } {
  if (typeof dependency === 'string') return { name: dependency, onFailure: 'fail' };
  if (dependency === null || typeof dependency !== 'object') {
    throw new InvalidFlowError(
      `node "${name}": each entry of after is a node name or { node, onFailure }, got ${describeValue(dependency)}.`,
    );
  }
  const { node, onFailure = 'fail', ...rest } = dependency as { node?: unknown; onFailure?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) {
    throw new InvalidFlowError(`node "${name}": unknown key "${unknown}" in after; an entry takes node and onFailure.`);
  }
  if (typeof node !== 'string') {
    throw new InvalidFlowError(
      `node "${name}": an entry of after names its node (a string), got ${describeValue(node)}.`,
    );
  }
  if (!FAILURE_POLICIES.includes(onFailure as FailurePolicy)) {
    throw new InvalidFlowError(
      `node "${name}": onFailure of "${node}" is ${describeValue(onFailure)}; it is one of ${FAILURE_POLICIES.join(', ')}.`,
    );
  }
  return { name: node, onFailure: onFailure as FailurePolicy };
}

/** Depth-first topological order; a node met again while on the path closes a cycle, which is named. */
function ordered(planned: ReadonlyMap<string, PlannedNode>): PlannedNode[] {
  const order: PlannedNode[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  for (const start of planned.keys()) {
    if (state.has(start)) continue;
    // An explicit stack: a chain of 100,000 nodes would overflow a recursive walk.
    const path: { name: string; next: number }[] = [{ name: start, next: 0 }];
    state.set(start, 'visiting');
    while (path.length > 0) {
      const top = path[path.length - 1]!;
      const node = planned.get(top.name)!;
      if (top.next < node.after.length) {
        const dependency = node.after[top.next++]!.name;
        const seen = state.get(dependency);
        if (seen === 'visiting') {
          const from = path.findIndex((step) => step.name === dependency);
          throw new FlowCycleError(path.slice(from).map((step) => step.name));
        }
        if (seen === undefined) {
          state.set(dependency, 'visiting');
          path.push({ name: dependency, next: 0 });
        }
      } else {
        state.set(top.name, 'done');
        order.push(node);
        path.pop();
      }
    }
  }
  return order;
}
