/**
 * Enqueue calls of two library builds, interleaved one by one on one fresh redis-server so the VM's drift hits both.
 *
 * Run: `[PIN=1] node dist/benchmarks/tools/ab-bulk.js <built library A> <built library B> [calls=500] [mode=bulk]`
 * after `npm run build`; mode is bulk, single or pipelined, or `modeA,modeB`.
 *
 * Each build is a copy of `libs/threadmill/dist` inside this repository (in
 * `.ab/`, say), so that its imports resolve; `libs/threadmill/dist` twice
 * compares two modes of one build. A call is 1,000 runs: `bulk` one atomic
 * `enqueueMany`, `pipelined` one `enqueueMany` with `{ atomic: false }`,
 * `single` 1,000 single enqueues from 64 callers that each await their
 * enqueue before the next (the benchmark's one-by-one phase). Prints per
 * build the median wall time of a call, the producer's CPU per run and
 * Redis's CPU per run (INFO cpu, read between calls), and in how many call
 * pairs the second build was faster. The first fifth of the calls is
 * warm-up. PIN=1 places Redis and this process on CPUs of their own, as the
 * benchmark does. The two builds share one heap, so one's garbage may be
 * collected during the other's call, and the slot a build takes can favour
 * it a little: run both orders.
 */
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { libraryBuild, loadModule, median, pinFromEnv, redisCpuUs } from '../lib/tool-support.js';
import { payload, type BenchPayload } from '../workers/protocol.js';

const MODES = ['bulk', 'single', 'pipelined'] as const;
type Mode = (typeof MODES)[number];

const [first, second, calls = '500', modes = 'bulk'] = process.argv.slice(2);
const [modeA, modeB = modeA] = modes.split(',') as Mode[];
if (!first || !second || ![modeA, modeB].every((mode) => MODES.includes(mode!))) {
  console.error(
    'usage: node dist/benchmarks/tools/ab-bulk.js <built library A> <built library B> [calls] [bulk|single|pipelined|modeA,modeB]',
  );
  process.exit(2);
}
const server = await RedisServer.start();
const admin = new Redis(server.url);
pinFromEnv(server);

interface Side {
  readonly name: string;
  readonly enqueue: (data: BenchPayload[]) => Promise<unknown>;
  readonly close: () => Promise<void>;
  readonly wall: number[];
  readonly cpu: number[];
  redisUs: number;
}

/** The benchmark's producer, built from the library in `dir`, on a queue of its own. */
async function side(name: string, dir: string, queue: string, mode: Mode): Promise<Side> {
  const { Task, TaskQueue, ThreadmillModule } = await loadModule(libraryBuild(dir), 'index.js');
  @Injectable()
  class BenchTasks {
    @Task({ name: 'bench.noop', queue })
    noop(_payload: BenchPayload): void {}
  }
  @Module({
    imports: [ThreadmillModule.forRoot({ connection: server.url, alias: queue, queues: [queue], resultTtlMs: 0 })],
    providers: [BenchTasks],
  })
  class BenchModule {}
  const app = await NestFactory.createApplicationContext(BenchModule, { logger: ['error'] });
  const tasks = app.get(TaskQueue);
  const enqueue =
    mode === 'single'
      ? async (data: BenchPayload[]) => {
          let next = 0;
          await Promise.all(
            Array.from({ length: 64 }, async () => {
              while (next < data.length) await tasks.enqueue('bench.noop', [data[next++]], { queue });
            }),
          );
        }
      : (data: BenchPayload[]) =>
          tasks.enqueueMany(
            data.map((d) => ({ task: 'bench.noop', args: [d], queue })),
            mode === 'pipelined' ? { atomic: false } : undefined,
          );
  return { name, enqueue, close: () => app.close(), wall: [], cpu: [], redisUs: 0 };
}

const sides = [await side('A', first, 'qa', modeA!), await side('B', second, 'qb', modeB!)];
const total = Number(calls);
for (let call = 0; call < total; call++) {
  // Both keyspaces stay small and alike: sets and hashes of at most 20 calls.
  if (call % 20 === 0) await admin.flushall();
  for (const s of call % 2 ? sides : [...sides].reverse()) {
    const data = Array.from({ length: 1000 }, (_, j) => payload(call * 1000 + j));
    const redisBefore = await redisCpuUs(admin, { mainThread: true });
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    await s.enqueue(data);
    const cpu = process.cpuUsage(cpuBefore);
    const wall = performance.now() - started;
    const redisAfter = await redisCpuUs(admin, { mainThread: true });
    if (call >= total / 5) {
      s.wall.push(wall);
      s.cpu.push((cpu.user + cpu.system) / 1000);
      s.redisUs += (redisAfter - redisBefore) / 1000;
    }
  }
}
for (const s of sides) {
  const wall = median(s.wall);
  console.log(
    `${s.name}: ${wall.toFixed(3)} ms per call (${Math.round(1e6 / wall).toLocaleString('en-US')} runs/s), ` +
      `producer ${median(s.cpu).toFixed(2)} µs and Redis ${(s.redisUs / s.wall.length).toFixed(2)} µs per run`,
  );
}
const [a, b] = sides as [Side, Side];
console.log(`B faster in ${b.wall.filter((wall, i) => wall < a.wall[i]!).length} of ${b.wall.length} call pairs`);
for (const s of sides) await s.close();
await admin.quit();
await server.stop();
