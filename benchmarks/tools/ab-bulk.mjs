#!/usr/bin/env node
// Bulk enqueue of two builds of the library, side by side in one process
// against one fresh redis-server, their calls of 1,000 runs interleaved one
// by one, so that this VM's changes of speed fall on both alike. With
// `single`, a "call" is 1,000 single enqueues from 64 callers that each
// await their enqueue before the next (the benchmark's one-by-one phase). Prints per
// build the median wall time of a call, the producer's CPU per run and
// Redis's CPU per run (INFO cpu, read between calls), and in how many call
// pairs the second build was faster. With `pipelined`, a call is one
// `enqueueMany` with `{ atomic: false }`. Two modes joined by a comma give A
// and B a mode each (the same build twice compares two modes).
// Usage: [PIN=1] node ab-bulk.mjs <built library A> <built library B> [calls=500] [bulk|single|pipelined|modeA,modeB]
// (PIN=1 places Redis and this process on CPUs of their own, as the benchmark does)
// (each a copy of libs/threadmill/dist, inside this repository so that its
// imports resolve; the first fifth of the calls is warm-up). The two builds
// share one heap, so one's garbage may be collected during the other's call,
// and the slot a build takes can favour it a little: run both orders.
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [first, second, calls = '500', modes = 'bulk'] = process.argv.slice(2);
const [modeA, modeB = modeA] = modes.split(',');
if (!first || !second) {
  console.error(
    'usage: node ab-bulk.mjs <built library A> <built library B> [calls] [bulk|single|pipelined|modeA,modeB]',
  );
  process.exit(2);
}
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const server = await RedisServer.start();
const admin = new Redis(server.url);
if (process.env.PIN) {
  // Redis and this process on CPUs of their own, as `npm run bench` places them.
  const { CpuPlacement } = await import(join(dist, 'lib/cpu-placement.js'));
  const placement = CpuPlacement.plan();
  if (!placement) throw new Error('PIN=1 needs 2 CPUs or more and taskset');
  CpuPlacement.bind(server.pid, placement.redis);
  CpuPlacement.bind(process.pid, placement.bench);
}

/** The benchmark's producer, built from the library in `dir`, on its own queue. */
async function producer(dir, queue, mode) {
  const lib = await import(join(resolve(dir), 'index.js'));
  class BenchTasks {
    noop() {}
  }
  Injectable()(BenchTasks);
  const noop = Object.getOwnPropertyDescriptor(BenchTasks.prototype, 'noop');
  lib.Task({ name: 'bench.noop', queue })(BenchTasks.prototype, 'noop', noop);
  class BenchModule {}
  Module({
    imports: [lib.ThreadmillModule.forRoot({ connection: server.url, alias: queue, queues: [queue], resultTtlMs: 0 })],
    providers: [BenchTasks],
  })(BenchModule);
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error'] });
  const queueService = app.get(lib.TaskQueue);
  return {
    bulk:
      mode === 'single'
        ? async (data) => {
            let next = 0;
            await Promise.all(
              Array.from({ length: 64 }, async () => {
                while (next < data.length) await queueService.enqueue('bench.noop', [data[next++]], { queue });
              }),
            );
          }
        : (data) =>
            queueService.enqueueMany(
              data.map((d) => ({ task: 'bench.noop', args: [d], queue })),
              mode === 'pipelined' ? { atomic: false } : undefined,
            ),
    close: () => app.close(),
  };
}

const redisCpuUs = async () => {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)[1]);
  return (field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1e6;
};

const sides = [
  { name: 'A', producer: await producer(first, 'qa', modeA), wall: [], cpu: [], redisUs: 0 },
  { name: 'B', producer: await producer(second, 'qb', modeB), wall: [], cpu: [], redisUs: 0 },
];
const total = Number(calls);
for (let call = 0; call < total; call++) {
  // Both keyspaces stay small and alike: sets and hashes of at most 20 calls.
  if (call % 20 === 0) await admin.flushall();
  for (const side of call % 2 ? sides : [...sides].reverse()) {
    const data = Array.from({ length: 1000 }, (_, j) => payload(call * 1000 + j));
    const redisBefore = await redisCpuUs();
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    await side.producer.bulk(data);
    const cpu = process.cpuUsage(cpuBefore);
    const wall = performance.now() - started;
    const redisAfter = await redisCpuUs();
    if (call >= total / 5) {
      side.wall.push(wall);
      side.cpu.push((cpu.user + cpu.system) / 1000);
      side.redisUs += (redisAfter - redisBefore) / 1000;
    }
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (const side of sides) {
  const wall = median(side.wall);
  console.log(
    `${side.name}: ${wall.toFixed(3)} ms per call (${Math.round(1e6 / wall).toLocaleString('en-US')} runs/s), ` +
      `producer ${median(side.cpu).toFixed(2)} µs and Redis ${(side.redisUs / side.wall.length).toFixed(2)} µs per run`,
  );
}
const faster = sides[1].wall.filter((wall, i) => wall < sides[0].wall[i]).length;
console.log(`B faster in ${faster} of ${sides[1].wall.length} call pairs`);
for (const side of sides) await side.producer.close();
await admin.quit();
await server.stop();
