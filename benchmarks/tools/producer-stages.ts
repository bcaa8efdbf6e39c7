/**
 * Where a single enqueue spends the producer's own time before its request is on the wire, stage by stage.
 *
 * Run: `[GAP=5] [WARM=0] node dist/benchmarks/tools/producer-stages.js [calls=300]` after `npm run build`.
 *
 * Marks are set by wrapping the methods that start each stage: the call
 * until its run is prepared (the item's validation, id and payload), the
 * coalescer, its flush on the next tick, the backend's store, its connection
 * check, and building and writing the script call; then the reply. Enqueues
 * one at a time, GAP ms apart (5, as the benchmark's latency phase; 0 back
 * to back); WARM=n enqueues n runs back to back first, so that V8 runs the
 * path optimised. Prints each stage's p50 and p90.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { percentile } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { libraryBuild, loadModule } from '../lib/tool-support.js';
import { now, payload } from '../workers/protocol.js';

const calls = Number(process.argv[2] ?? 300);
const gap = Number(process.env['GAP'] ?? 5);
// This checkout's build: the module instances the producer uses, whose methods are wrapped.
const lib = libraryBuild();
const { TaskQueue } = await loadModule(lib, 'queue/task-queue.js');
const { StoreCoalescer } = await loadModule(lib, 'queue/store-coalescer.js');
const { RedisTaskBackend } = await loadModule(lib, 'backend/redis/redis.backend.js');
const { RedisConnections } = await loadModule(lib, 'backend/redis/redis-connections.js');

const marks = new Map<string, number>();
const mark = (stage: string) => marks.has(stage) || marks.set(stage, now());
type Method = (...args: unknown[]) => unknown;
/** Marks `stage` when method `name` of `type` is called (or, with `after`, when it returns or resolves). */
function wrap(type: { prototype: object }, name: string, stage: string, after = false): void {
  const methods = type.prototype as Record<string, Method>;
  const original = methods[name];
  if (!original)
    throw new Error(`${name} is no longer a method of the class wrapped for "${stage}": update this tool.`);
  methods[name] = function (this: unknown, ...args: unknown[]) {
    if (!after) mark(stage);
    const result = original.apply(this, args);
    if (!after) return result;
    if (result instanceof Promise) return result.then((value: unknown) => (mark(stage), value));
    mark(stage);
    return result;
  };
}
wrap(TaskQueue, 'prepare', 'prepare the run', true);
wrap(StoreCoalescer, 'store', 'to the coalescer');
wrap(StoreCoalescer, 'flush', 'its next-tick flush');
wrap(RedisTaskBackend, 'store', 'to the backend');
wrap(RedisConnections, 'ready', 'connection check', true);
wrap(net.Socket, 'write', 'build and write the call');

const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
for (let i = 0; i < Number(process.env['WARM'] ?? 0); i++) await producer.enqueue(payload(i));
await delay(500);
const rows: Map<string, number>[] = [];
for (let i = 0; i < calls; i++) {
  marks.clear();
  const t = now();
  await producer.enqueue(payload(i, t));
  const replied = now();
  const row = new Map<string, number>();
  let previous = t;
  for (const [stage, at] of marks) {
    row.set(stage, at - previous);
    previous = at;
  }
  row.set('the reply', replied - previous);
  rows.push(row);
  if (gap > 0) await delay(gap);
}
const inUs = (ms: number) => (ms * 1000).toFixed(0).padStart(4);
for (const stage of rows.at(-1)!.keys()) {
  const values = rows.map((row) => row.get(stage)).filter((v) => v !== undefined);
  console.log(`${stage.padEnd(26)} p50 ${inUs(percentile(values, 50))} µs  p90 ${inUs(percentile(values, 90))} µs`);
}
await producer.close();
await server.stop();
process.exit(0);
