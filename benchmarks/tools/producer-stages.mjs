#!/usr/bin/env node
// Where a single enqueue spends the producer's own time before its request
// is on the wire, stage by stage (marks set by wrapping the methods that
// start each stage): the call until its run is prepared (the item's
// validation, id and payload), the coalescer, its flush on the next
// tick, the backend's store, its connection check, and building and writing
// the script call; then the reply. Enqueues one at a time, GAP ms apart
// (default 5, as the benchmark's latency phase; 0 back to back).
// Usage: GAP=5 WARM=0 node producer-stages.mjs [calls=300]   (after `npm run build`)
import { RedisServer } from '@threadmill/nestjs/testing';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const calls = Number(process.argv[2] ?? 300);
const gap = Number(process.env.GAP ?? 5);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload, now } = await import(join(dist, 'workers/protocol.js'));
const { TaskQueue } = await import(join(lib, 'queue/task-queue.js'));
const { StoreCoalescer } = await import(join(lib, 'queue/store-coalescer.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { RedisConnections } = await import(join(lib, 'backend/redis/redis-connections.js'));

const marks = new Map();
const mark = (stage) => marks.has(stage) || marks.set(stage, now());
/** Marks `stage` when `name` of `type` is called (or, with `after`, when it returns or resolves). */
function wrap(type, name, stage, after = false) {
  const original = type.prototype[name];
  type.prototype[name] = function (...args) {
    if (!after) mark(stage);
    const result = original.apply(this, args);
    if (!after) return result;
    if (result instanceof Promise) return result.then((value) => (mark(stage), value));
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
// WARM=n enqueues n runs back to back first: V8 then runs the path optimised.
for (let i = 0; i < Number(process.env.WARM ?? 0); i++) await producer.enqueue(payload(i));
await delay(500);
const rows = [];
for (let i = 0; i < calls; i++) {
  marks.clear();
  const t = now();
  await producer.enqueue(payload(i, t));
  const replied = now();
  const row = {};
  let previous = t;
  for (const [stage, at] of marks) {
    row[stage] = at - previous;
    previous = at;
  }
  row['the reply'] = replied - previous;
  rows.push(row);
  if (gap > 0) await delay(gap);
}
const pct = (values, p) => [...values].sort((a, b) => a - b)[Math.ceil((p / 100) * values.length) - 1];
for (const stage of Object.keys(rows.at(-1))) {
  const values = rows.map((row) => row[stage]).filter((v) => v !== undefined);
  console.log(
    `${stage.padEnd(26)} p50 ${(pct(values, 50) * 1000).toFixed(0).padStart(4)} µs  p90 ${(pct(values, 90) * 1000).toFixed(0).padStart(4)} µs`,
  );
}
await producer.close();
await server.stop();
process.exit(0);
