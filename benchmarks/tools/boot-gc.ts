/**
 * What the boot garbage collection buys a fresh worker at the default settings: drains with it and without, alternating.
 *
 * Run: `node dist/benchmarks/tools/boot-gc.js [pairs=8] [N=20000]` after `npm run build`.
 *
 * Each drain gets a fresh worker process (the benchmark's Threadmill worker
 * at every default, results kept: `BENCH_DEFAULTS=1`) and N runs stored in an
 * emptied Redis before it starts; the rate runs from its first handler call
 * to its N-th. The pairs alternate which mode goes first.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { threadmillProducer } from '../lib/producers.js';
import { enqueueInBulk, median } from '../lib/tool-support.js';
import type { FromWorker } from '../workers/protocol.js';

const [pairs = 8, n = 20_000] = process.argv.slice(2).map(Number);
const server = await RedisServer.start();
const redis = new Redis(server.url);

/** Runs/s of one drain of `n` runs by a fresh worker, with the boot collection on or off. */
async function drain(bootGc: boolean): Promise<number> {
  await redis.flushall();
  const producer = await threadmillProducer(server.url, 'bench');
  await enqueueInBulk(producer, n);
  await producer.close();
  const worker = fork(fileURLToPath(new URL('../workers/threadmill-worker.js', import.meta.url)), [], {
    env: { ...process.env, REDIS_URL: server.url, BENCH_DEFAULTS: '1', THREADMILL_BOOT_GC: String(bootGc) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const { firstAt, lastAt } = await new Promise<{ firstAt: number; lastAt: number }>((resolve) =>
    worker.on('message', (m: FromWorker) => m.type === 'progress' && m.count >= n && resolve(m)),
  );
  worker.kill('SIGKILL');
  return Math.round(n / ((lastAt - firstAt) / 1000));
}

const on: number[] = [];
const off: number[] = [];
for (let pair = 0; pair < pairs; pair++) {
  for (const bootGc of pair % 2 === 0 ? [true, false] : [false, true]) (bootGc ? on : off).push(await drain(bootGc));
}
console.log(`boot gc on   ${on.join(' ')}  median ${median(on)} runs/s`);
console.log(`boot gc off  ${off.join(' ')}  median ${median(off)} runs/s`);
console.log(`on ahead in ${on.filter((rate, i) => rate > off[i]!).length} of ${pairs} pairs`);
redis.disconnect();
await server.stop();
