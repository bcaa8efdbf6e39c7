#!/usr/bin/env node
// The producer's own cost of an enqueue, per run: CPU and heap bytes
// allocated, through the benchmark's Threadmill producer, in bulk (calls of
// 1,000 runs) or one by one (64 calls in flight, as in the benchmark). The enqueue script's call is answered in this process, so that
// neither Redis nor the round trip blurs what validating, encoding and
// building the results cost: ioredis's own encoding is left out too.
// Allocation is counted from V8's GC events (bytes used before each
// collection less bytes left after the one before), which, unlike CPU time,
// barely moves between runs.
// Usage: node producer-cost.mjs [N=50000] [repeats=6] [bulk|single]
// (prints one figure per repeat; the first includes the warm-up)
import { RedisServer } from '@threadmill/nestjs/testing';
import { GCProfiler } from 'node:v8';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [n = 50_000, repeats = 6] = process.argv.slice(2, 4).map(Number);
const single = process.argv[4] === 'single';
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { scriptCommand } = await import(join(lib, 'backend/redis/scripts/redis-scripts.js'));

// Every run stored, at once: the reply of an enqueue that found no existing id.
const store = RedisTaskBackend.prototype.store;
RedisTaskBackend.prototype.store = function (runs) {
  this.connections.client[scriptCommand('enqueue')] = async () => [Date.now()];
  return store.call(this, runs);
};

const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
for (let r = 0; r < repeats; r++) {
  const profiler = new GCProfiler();
  profiler.start();
  const heapBefore = process.memoryUsage().heapUsed;
  const cpuBefore = process.cpuUsage();
  if (single) {
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < n) await producer.enqueue(payload(next++));
      }),
    );
  } else {
    for (let i = 0; i < n; i += 1000)
      await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
  }
  const cpu = process.cpuUsage(cpuBefore);
  const heapAfter = process.memoryUsage().heapUsed;
  let allocated = 0;
  let left = heapBefore;
  for (const { beforeGC, afterGC } of profiler.stop().statistics) {
    allocated += beforeGC.heapStatistics.usedHeapSize - left;
    left = afterGC.heapStatistics.usedHeapSize;
  }
  allocated += heapAfter - left;
  console.log(
    `repeat ${r + 1}: ${((cpu.user + cpu.system) / n).toFixed(2)} µs CPU and ${Math.round(allocated / n)} bytes allocated per run`,
  );
}
await producer.close();
await server.stop();
