import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { enqueueFlows, flowNodes, type FlowOptions } from './flow-phase.js';
import { MEMORY_SERVER_OPTIONS, settledMemory } from './memory-phase.js';
import type { SystemSpec } from './systems.js';
import { enqueueInBulk } from './tool-support.js';

/** What a system's flows cost Redis beyond their runs, in bytes of `used_memory`. */
export interface FlowMemoryResult {
  /** Growth per flow stored (a parent and its children, pending). */
  readonly bytesPerFlow: number;
  /** Growth per as many plain runs, stored through the bulk API. */
  readonly bytesPerPlainRuns: number;
  /** The difference, per edge (a child's edge to its parent). */
  readonly bytesPerEdge: number;
}

/** The flow memory row: `flows` flows per system, by system key. */
export interface FlowMemoryRow {
  readonly flows: number;
  readonly children: number;
  readonly results: Readonly<Record<string, FlowMemoryResult>>;
}

/**
 * The growth of `used_memory` that `fill` makes, through a client `open`
 * makes for it. From an empty Redis, a first client stores one item
 * (`warmUp`: the system's scripts loaded, its queue's keys made, as they are
 * for every item after) and closes; memory is read, a second client stores
 * the measured items and closes, and memory is read again: the difference is
 * the items alone, with no client connected at either reading.
 */
async function growth<P extends { close(): Promise<void> }>(
  redis: Redis,
  open: () => Promise<P>,
  warmUp: (client: P) => Promise<void>,
  fill: (client: P) => Promise<void>,
): Promise<number> {
  await redis.flushall();
  await redis.script('FLUSH');
  const first = await open();
  try {
    await warmUp(first);
  } finally {
    await first.close();
  }
  const before = await settledMemory(redis);
  const second = await open();
  try {
    await fill(second);
  } finally {
    await second.close();
  }
  return (await settledMemory(redis)) - before;
}

/**
 * One system's memory per flow edge: the growth of `used_memory` once
 * `flows` flows are stored (pending, no worker), less the growth once as many
 * plain runs are, divided by the flows' edges.
 */
export async function measureFlowMemory(
  spec: SystemSpec,
  url: string,
  redis: Redis,
  options: FlowOptions,
): Promise<FlowMemoryResult> {
  const flowProducer = spec.flowProducer;
  if (!flowProducer) throw new Error(`${spec.label} has no flowProducer (benchmarks/lib/systems.ts).`);
  const nodes = flowNodes(options);
  const flows = await growth(
    redis,
    () => flowProducer(url, 'bench'),
    (p) => enqueueFlows(p, { ...options, flows: 1 }),
    (p) => enqueueFlows(p, options),
  );
  const plain = await growth(
    redis,
    () => spec.producer(url, 'bench'),
    (p) => enqueueInBulk(p, 1),
    (p) => enqueueInBulk(p, nodes),
  );
  return {
    bytesPerFlow: flows / options.flows,
    bytesPerPlainRuns: plain / options.flows,
    bytesPerEdge: (flows - plain) / (options.flows * options.children),
  };
}

/**
 * The flow memory row for `systems` (those with a flow API), one after the
 * other on a redis-server of its own, set as the memory row's.
 */
export async function runFlowMemoryRow(
  systems: readonly SystemSpec[],
  options: FlowOptions,
  onSystem: (spec: SystemSpec) => void = () => undefined,
): Promise<FlowMemoryRow> {
  const results: Record<string, FlowMemoryResult> = {};
  const server = await RedisServer.start(MEMORY_SERVER_OPTIONS);
  const redis = new Redis(server.url);
  try {
    for (const spec of systems) {
      if (!spec.flowProducer) continue;
      onSystem(spec);
      results[spec.key] = await measureFlowMemory(spec, server.url, redis, options);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  return { flows: options.flows, children: options.children, results };
}
