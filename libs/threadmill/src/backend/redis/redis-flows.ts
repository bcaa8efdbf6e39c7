import type { FlowStore } from '../flow-store.js';
import type {
  FlowEdge,
  FlowState,
  NewFlow,
  NewFlowNode,
  StoredDependency,
  StoredFlow,
  StoredFlowNode,
} from '../../records/flow-records.js';
import type { ResultTtls } from '../../records/result-ttl.js';
import type { LeaseRef } from '../../records/backend-records.js';
import { outcomeOfLetter, policyCode, policyOfCode } from '../../rules/flow-rules.js';
import type { RedisClient } from './redis-client.js';
import type { RedisConnections } from './redis-connections.js';
import type { RedisKeys } from './redis-keys.js';
import { runScript } from './scripts/redis-scripts.js';
import type { ScriptKeys } from './scripts/script-keys.js';

/**
 * Nodes per script call of a flow's store: a larger flow goes in parts, then
 * a seal (`lua/flow-store.lua`), so no call holds Redis for long.
 */
const PART_NODES = 1_000;

/** The flows of a Redis backend (`lua/flow-store.lua`, `flow-dependencies.lua`, `flow-cancel.lua`). */
export class RedisFlowStore implements FlowStore {
  constructor(
    private readonly connections: RedisConnections,
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
    private readonly scriptKeys: ScriptKeys,
    private readonly resultTtls: ResultTtls,
  ) {}

  /** How long a finished flow's record is kept: as long as the longer-kept of its nodes' outcomes. */
  private get flowTtl(): number {
    return Math.max(this.resultTtls.successful, this.resultTtls.failed);
  }

  async store(flow: NewFlow): Promise<{ now: number; created: boolean }> {
    await this.connections.ready();
    const keys = this.scriptKeys.flowStore(flow.id);
    const dependents = dependentsOf(flow.nodes);
    if (flow.nodes.length <= PART_NODES) {
      const args = encodeNodes('whole', 1, flow.nodes, dependents);
      const [now, created] = (await runScript(this.client, 'flowStore', keys, args)) as [number, number];
      return { now, created: created === 1 };
    }
    let first: { now: number; created: boolean } | undefined;
    for (let part = 0; part * PART_NODES < flow.nodes.length; part++) {
      const nodes = flow.nodes.slice(part * PART_NODES, (part + 1) * PART_NODES);
      const args = encodeNodes('part', part + 1, nodes, dependents);
      const [now, created] = (await runScript(this.client, 'flowStore', keys, args)) as [number, number];
      first ??= { now, created: created === 1 };
    }
    // Whole now: its roots are readied a page per call.
    for (let left = 1; left > 0;) {
      [, left] = (await runScript(this.client, 'flowStore', keys, ['seal', PART_NODES, 0])) as [number, number];
    }
    return first!;
  }

  async load(id: string): Promise<StoredFlow | null> {
    await this.connections.ready();
    const fields = await this.connections.guardRead(() => this.client.hgetall(this.keys.flow(id)));
    if (fields['state'] === undefined) return null;
    return parseFlow(id, fields);
  }

  async dependencies(runId: string): Promise<StoredDependency[]> {
    await this.connections.ready();
    const reply = (await runScript(this.client, 'flowDependencies', this.scriptKeys.flowDependencies(runId), [
      runId,
    ])) as string[];
    const dependencies: StoredDependency[] = [];
    for (let i = 1; i + 2 < reply.length; i += 3) {
      const entry = parseEntry(reply[i + 2]!);
      dependencies.push({
        id: reply[i]!,
        name: entry.name,
        onFailure: policyOfCode(reply[i + 1]!),
        ...(entry.outcome === undefined ? {} : { outcome: entry.outcome, value: entry.value }),
      });
    }
    return dependencies;
  }

  async extend(caller: LeaseRef, nodes: readonly NewFlowNode[]): Promise<'added' | 'lost' | 'not-a-node'> {
    await this.connections.ready();
    const args = encodeExtension(caller, nodes);
    const [, added] = (await runScript(this.client, 'flowExtend', this.scriptKeys.flowExtend(), args)) as [
      number,
      number,
    ];
    return added === 1 ? 'added' : added === 0 ? 'lost' : 'not-a-node';
  }

  async cancel(id: string): Promise<{ cancelled: number; state: FlowState | null }> {
    await this.connections.ready();
    const keys = this.scriptKeys.flowCancel(id);
    let cursor = '0';
    let cancelled = 0;
    let state = '';
    do {
      const [next, count, after] = (await runScript(this.client, 'flowCancel', keys, [
        cursor,
        this.resultTtls.failed,
        this.flowTtl,
      ])) as [string, number, string];
      cursor = String(next);
      cancelled += count;
      state = after;
    } while (cursor !== '0');
    return { cancelled, state: state === '' ? null : (state as FlowState) };
  }
}

/** The distinct queues of `nodes` as a flow script takes them (count, then names), and each one's 1-based index. */
function queuesOf(nodes: readonly NewFlowNode[]): { index: Map<string, number>; args: (string | number)[] } {
  const queues: string[] = [];
  const index = new Map<string, number>();
  for (const { run } of nodes) {
    if (!index.has(run.queue)) index.set(run.queue, queues.push(run.queue));
  }
  return { index, args: [queues.length, ...queues] };
}

/** The ARGV of a flowExtend call (see its header). */
function encodeExtension(caller: LeaseRef, nodes: readonly NewFlowNode[]): (string | number)[] {
  const { index, args: queueArgs } = queuesOf(nodes);
  const args: (string | number)[] = [caller.id, caller.token, ...queueArgs];
  for (const { run, name } of nodes) {
    args.push(
      run.id,
      index.get(run.queue)!,
      run.priority,
      run.runAt,
      run.delayMs,
      run.leaseTtlMs,
      run.limitGroup ?? '',
      name,
      run.payload,
    );
  }
  return args;
}

/** Each node's dependents, as its `then` field holds them: `<id>:<policy>,...`. */
function dependentsOf(nodes: readonly NewFlowNode[]): Map<string, string[]> {
  const dependents = new Map<string, string[]>();
  for (const { run, after } of nodes) {
    for (const edge of after) {
      const list = dependents.get(edge.id);
      const entry = `${run.id}:${policyCode(edge.onFailure)}`;
      if (list) list.push(entry);
      else dependents.set(edge.id, [entry]);
    }
  }
  return dependents;
}

/** The ARGV of a flowStore call of `nodes` (see its header). */
function encodeNodes(
  phase: 'whole' | 'part',
  part: number,
  nodes: readonly NewFlowNode[],
  dependents: ReadonlyMap<string, readonly string[]>,
): (string | number)[] {
  const { index, args: queueArgs } = queuesOf(nodes);
  const args: (string | number)[] = [phase, part, ...queueArgs];
  for (const { run, name, after } of nodes) {
    args.push(
      run.id,
      index.get(run.queue)!,
      run.priority,
      run.runAt,
      run.delayMs,
      run.leaseTtlMs,
      run.limitGroup ?? '',
      name,
      after.map((edge) => `${edge.id}:${policyCode(edge.onFailure)}`).join(','),
      dependents.get(run.id)?.join(',') ?? '',
      run.payload,
    );
  }
  return args;
}

/** A node's entry in its flow's hash: `<letter>|<name>|<queue>|<json>` (lua/includes/flow-settle.lua). */
function parseEntry(entry: string): {
  name: string;
  queue: string;
  outcome?: StoredFlowNode['outcome'];
  value: string;
} {
  const first = entry.indexOf('|');
  const second = entry.indexOf('|', first + 1);
  const third = entry.indexOf('|', second + 1);
  const outcome = outcomeOfLetter(entry.slice(0, first));
  return {
    name: entry.slice(first + 1, second),
    queue: entry.slice(second + 1, third),
    ...(outcome === undefined ? {} : { outcome }),
    value: entry.slice(third + 1),
  };
}

function parseEdges(text: string | undefined): FlowEdge[] {
  if (!text) return [];
  return text.split(',').map((edge) => {
    const at = edge.lastIndexOf(':');
    return { id: edge.slice(0, at), onFailure: policyOfCode(edge.slice(at + 1)) };
  });
}

function parseFlow(id: string, fields: Record<string, string>): StoredFlow {
  const nodes: StoredFlowNode[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith('n:')) continue;
    const nodeId = field.slice(2);
    const { name, queue, outcome, value: json } = parseEntry(value);
    nodes.push({
      id: nodeId,
      name,
      queue,
      after: parseEdges(fields[`e:${nodeId}`]),
      ...(outcome === undefined ? {} : { outcome, value: json }),
    });
  }
  // Run ids sort by the time they were made: the flow's nodes in the order it was built.
  nodes.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return {
    id,
    state: fields['state'] as FlowState,
    createdAt: Number(fields['createdAt']),
    ...(fields['finishedAt'] === undefined ? {} : { finishedAt: Number(fields['finishedAt']) }),
    open: Number(fields['open'] ?? 0),
    nodes,
  };
}
