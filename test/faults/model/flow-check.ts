import assert from 'node:assert/strict';
import type { StoredDependency, StoredFlowNode } from '../../../libs/threadmill/src/records/flow-records.js';
import { listedDependency, policyCode } from '../../../libs/threadmill/src/rules/flow-rules.js';
import { flowDependency } from '../../../libs/threadmill/src/task/flow-dependency.js';
import { FLOW_QUEUES, nodesIn, type ModelFlowNode } from './flow-model.js';
import { nodeScore, statusText } from './flow-transitions.js';
import type { ModelRig } from './redis-rig.js';
import { SEGMENTS, type RunModel } from './run-model.js';

/**
 * The flows as Redis holds them, after every step (`docs/flows.md`; the
 * layout in `lua/includes/flow-settle.lua`):
 *
 * - each flow queue's segments (WAITING included) hold exactly the model's
 *   nodes of that status, the ready one in score order, the successful one
 *   in the order they succeeded; `counts` agrees;
 * - each node reads as the model's status (a dequeued one is gone), with the
 *   model's attempts; its run hash names its flow, counts its `pending`
 *   dependencies while WAITING, and keeps its `then` edges until its first
 *   outcome; it holds a lease exactly while RUNNING, the model's;
 * - each flow's `load` is the model's: state, open nodes, and each node's
 *   name, queue, edges and first outcome with its JSON (a failure by a
 *   dependency: an error naming the dependency and how it ended); its hash
 *   counts its failures, holds the cancel flag, and expires once finished;
 * - each node's `dependencies` are the model's edges with their outcomes,
 *   and `context.dependencies()` lists those `listedDependency` keeps;
 * - the flow queues' counters are the model's, their `flowed` flags set
 *   once they got nodes, and no flow key exists that the model lacks.
 */
export async function assertFlows(model: RunModel, rig: ModelRig): Promise<void> {
  const { flows } = model;
  const { backend, client } = rig;
  const { keys } = backend;
  if (flows.flows.size === 0) {
    // No flow (none stored, or a restore went back before the first): none in Redis.
    assert.deepEqual(
      (await client.keys(`${keys.flowPrefix}*`)).filter((key) => key !== keys.flow('warm-up')),
      [],
      'the flow keys',
    );
    return;
  }
  const nodes = [...flows.nodes.values()];
  const ids = nodes.map((node) => node.id);
  const flowIds = [...flows.flows.keys()];
  const [pages, counts, stats, flowed, leases, loaded, fields, stored, raw, ttls, dependencies, flowKeys] =
    await Promise.all([
      Promise.all(FLOW_QUEUES.flatMap((queue) => SEGMENTS.map((segment) => backend.list(queue, segment, 0, 10_000)))),
      backend.counts(FLOW_QUEUES),
      Promise.all(FLOW_QUEUES.map((queue) => backend.stats(queue))),
      Promise.all(FLOW_QUEUES.map((queue) => client.exists(keys.flowed(queue)))),
      client.hgetall(keys.leases),
      backend.loadMany(ids),
      Promise.all(ids.map((id) => client.hmget(keys.run(id), 'flow', 'pending', 'then'))),
      Promise.all(flowIds.map((id) => backend.flows.load(id))),
      Promise.all(flowIds.map((id) => client.hmget(keys.flow(id), 'nodes', 'failed', 'cancelled', 'parts'))),
      Promise.all(flowIds.map((id) => client.pttl(keys.flow(id)))),
      Promise.all(ids.map((id) => backend.flows.dependencies(id))),
      client.keys(`${keys.flowPrefix}*`),
    ]);

  FLOW_QUEUES.forEach((queue, q) => {
    SEGMENTS.forEach((segment, s) => {
      const page = pages[q * SEGMENTS.length + s]!;
      const modelled = nodesIn(flows, queue, segment);
      assert.deepEqual([...page].sort(), modelled.map((node) => node.id).sort(), `${queue}'s ${segment} nodes`);
      assert.equal(counts[q]![segment], page.length, `counts of ${queue}/${segment}`);
      if (segment === 'ready') {
        const order = [...modelled].sort((a, b) => nodeScore(a) - nodeScore(b)).map((node) => node.id);
        assert.deepEqual(page, order, `${queue}'s ready order`);
      }
      if (segment === 'successful') {
        const order = [...modelled].sort((a, b) => b.succeededSeq! - a.succeededSeq!).map((node) => node.id);
        assert.deepEqual(page, order, `${queue}'s successful nodes, newest first`);
      }
    });
    assert.deepEqual(stats[q], flows.stats[queue], `the counters of ${queue}`);
    assert.equal(flowed[q] === 1, flows.flowed.has(queue), `the flowed flag of ${queue}`);
  });

  nodes.forEach((node, i) => {
    const record = loaded[i];
    const [flow, pending, then] = fields[i]!;
    if (node.status === 'gone') {
      assert.equal(record, null, `node ${node.id}, dequeued, is gone`);
      assert.equal(flow, null, `node ${node.id}, dequeued, has no run hash`);
      assert.deepEqual(dependencies[i], [], `the dependencies of ${node.id}, dequeued`);
      return;
    }
    assert.ok(record, `node ${node.id} is stored`);
    const running = node.status === 'running';
    assert.equal(record['status'] ?? 'READY', statusText(node.status), `status of node ${node.id}`);
    assert.equal(Number(record['attempts'] ?? 0), node.charged + (running ? 1 : 0), `attempts of node ${node.id}`);
    assert.equal(flow, node.flow, `the flow of node ${node.id}`);
    assert.equal(pending, node.pending === undefined ? null : String(node.pending), `pending of node ${node.id}`);
    const edges = node.dependents?.map((edge) => `${edge.id}:${policyCode(edge.onFailure)}`).join(',') ?? null;
    assert.equal(then, edges, `the then edges of node ${node.id}`);
    const lease = leases[node.id];
    if (!running) {
      assert.equal(lease, undefined, `a lease on node ${node.id}, which is ${node.status}`);
    } else {
      const [token, , , , started] = (lease ?? '').split('|');
      assert.deepEqual(
        { token, started },
        { token: node.lease!.token, started: node.lease!.started ? '1' : '0' },
        `the lease of node ${node.id}`,
      );
    }
    checkDependencies(model, node, dependencies[i]!, rig);
  });

  flowIds.forEach((id, f) => {
    const flow = flows.flows.get(id)!;
    const read = stored[f];
    assert.ok(read, `flow ${id} is stored`);
    const finished = flow.state !== 'RUNNING';
    assert.deepEqual(
      { state: read.state, open: read.open, nodes: read.nodes.map((node) => readNode(model, node)) },
      {
        state: flow.state,
        open: flow.open,
        nodes: flow.nodes
          .map((nodeId) => modelNode(flows.nodes.get(nodeId)!))
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
      },
      `the record of flow ${id}`,
    );
    assert.equal(read.finishedAt !== undefined, finished, `flow ${id} has a finish time once it ended`);
    const [count, failed, cancelled, parts] = raw[f]!;
    assert.deepEqual(
      { count, failed: failed ?? '0', cancelled, parts },
      {
        count: String(flow.nodes.length),
        failed: String(flow.failed),
        cancelled: flow.cancelled ? '1' : null,
        parts: '1',
      },
      `the counts of flow ${id}`,
    );
    assert.equal(ttls[f]! > 0, finished, `flow ${id} expires once it ended (its TTL: ${ttls[f]})`);
  });
  const warmUp = keys.flow('warm-up');
  assert.deepEqual(
    flowKeys.filter((key) => key !== warmUp).sort(),
    flowIds.map((id) => keys.flow(id)).sort(),
    'the flow keys',
  );
}

/** A node of a flow's `load`, its value replaced by the model's when it is a dependency's error of the right shape. */
function readNode(model: RunModel, read: StoredFlowNode): StoredFlowNode {
  const node = model.flows.nodes.get(read.id);
  if (node?.failedBy === undefined || read.outcome !== 'FAILED') return read;
  assertDependencyError(node, read.value);
  return { ...read, value: '<dependency error>' };
}

function modelNode(node: ModelFlowNode): StoredFlowNode {
  return {
    id: node.id,
    name: node.name,
    queue: node.queue,
    after: node.after,
    ...(node.outcome === undefined ? {} : { outcome: node.outcome, value: shownValue(node) }),
  };
}

const shownValue = (node: ModelFlowNode): string => (node.failedBy === undefined ? node.value! : '<dependency error>');

/** The error of a node failed by a dependency's edge: uncharged, naming the dependency and how it ended. */
function assertDependencyError(node: ModelFlowNode, value: string | undefined): void {
  const error = JSON.parse(value ?? 'null') as { errorClass?: string; message?: string; attempt?: number } | null;
  const { id, outcome } = node.failedBy!;
  assert.equal(error?.errorClass, 'DependencyFailedError', `the error of ${node.id}, failed by ${id}`);
  assert.equal(error.attempt, 0, `the attempt of ${node.id}'s error`);
  assert.ok(
    error.message?.includes(id) && error.message.includes(outcome),
    `${node.id}'s error names ${id} and ${outcome}: ${error.message}`,
  );
}

/**
 * A node's dependencies as the backend reads them (`flow-dependencies.lua`):
 * every edge, with its dependency's first outcome; and what a task's
 * `context.dependencies()` lists of them (`flowDependency`): every edge but a
 * `remove` edge's failure (`listedDependency`).
 */
function checkDependencies(model: RunModel, node: ModelFlowNode, read: StoredDependency[], rig: ModelRig): void {
  const shown = read.map((dep) => {
    const dependency = model.flows.nodes.get(dep.id);
    if (dependency?.failedBy === undefined || dep.outcome !== 'FAILED') return dep;
    assertDependencyError(dependency, dep.value);
    return { ...dep, value: '<dependency error>' };
  });
  const modelled = node.after.map((edge): StoredDependency => {
    const dependency = model.flows.nodes.get(edge.id)!;
    return {
      id: edge.id,
      name: dependency.name,
      onFailure: edge.onFailure,
      ...(dependency.outcome === undefined ? {} : { outcome: dependency.outcome, value: shownValue(dependency) }),
    };
  });
  assert.deepEqual(shown, modelled, `the dependencies of node ${node.id}`);
  const listed = node.after
    .filter((edge) => listedDependency(edge.onFailure, model.flows.nodes.get(edge.id)!.outcome))
    .map((edge) => ({ id: edge.id, status: model.flows.nodes.get(edge.id)!.outcome ?? 'PENDING' }));
  assert.deepEqual(
    read.flatMap((dep) => flowDependency(dep)).map((dep) => ({ id: dep.id, status: dep.status })),
    listed,
    `what context.dependencies() lists to node ${node.id}`,
  );
  if (listed.length < node.after.length) rig.tally.note('flow: a removed failure left unlisted');
  if (listed.some((dep) => dep.status === 'PENDING') && node.status !== 'waiting') {
    rig.tally.note('flow: a node READY lists a PENDING dependency');
  }
}
