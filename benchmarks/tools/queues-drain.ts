/**
 * Drains N no-op runs spread evenly over Q queues that one worker process consumes: drain rate and Redis CPU per run.
 *
 * Run: `node dist/benchmarks/tools/queues-drain.js [N=20000] [concurrency=100] [Q=1,10,100] [repeats=3]` after
 * `npm run build`.
 *
 * For each queue count of the comma-separated list, and each repeat: fills a
 * fresh redis-server with N runs, run i into queue i mod Q (`bench`,
 * `bench-1`, …; calls of 1,000), results not kept, then starts one benchmark
 * worker (`workers/threadmill-worker.js`, its throughput settings: prefetch
 * 1000 unless BENCH_PREFETCH says otherwise) consuming all Q queues, and
 * reports the rate from its first run to its last, Redis's CPU over the
 * drain and the worker's RSS at its end. Redis runs on CPU 0 and the worker
 * on CPU 1 (`taskset`; PIN=0 leaves them to the scheduler). Prints each run and, per queue count, the medians
 * and their ratio to the first count's.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { threadmillProducer } from '../lib/producers.js';
import { benchWorkerEnv, enqueueInBulk, median, redisCpuUs } from '../lib/tool-support.js';
import type { FromWorker } from '../workers/protocol.js';

const args = process.argv.slice(2);
const n = Number(args[0] ?? 20_000);
const concurrency = Number(args[1] ?? 100);
const queueCounts = (args[2] ?? '1,10,100').split(',').map(Number);
const repeats = Number(args[3] ?? 3);
const pin = process.env['PIN'] !== '0';

/** The names of `count` queues: `bench` first, as the benchmark worker's task declares. */
function queueNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i === 0 ? 'bench' : `bench-${i}`));
}

/** The worker's resident set (MB) at the end of its drain, or NaN when /proc cannot tell. */
function workerRssMb(pid: number): number {
  const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return kb === undefined ? NaN : Number(kb) / 1024;
}

/** One drain of n runs over `count` queues: runs/s, Redis µs per run, the worker's RSS (MB) after. */
async function drain(count: number): Promise<{ rate: number; redisUs: number; rss: number }> {
  const server = await RedisServer.start();
  if (pin) execFileSync('taskset', ['-p', '-c', '0', String(server.pid)]);
  const names = queueNames(count);
  const producer = await threadmillProducer(server.url, 'bench', { spread: names });
  await enqueueInBulk(producer, n);
  await producer.close();
  const worker = fork(fileURLToPath(new URL('../workers/threadmill-worker.js', import.meta.url)), [], {
    execPath: pin ? 'taskset' : process.execPath,
    execArgv: pin ? ['-c', '1', process.execPath] : [],
    env: { ...benchWorkerEnv(server.url, concurrency), BENCH_QUEUES: names.join(',') },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const admin = new Redis(server.url);
  const cpuBefore = await redisCpuUs(admin);
  const result = await new Promise<{ rate: number; redisUs: number; rss: number }>((resolve) =>
    worker.on('message', (m: FromWorker) => {
      if (m.type !== 'progress' || m.count < n) return;
      const wall = (m.lastAt - m.firstAt) / 1000;
      const rss = workerRssMb(worker.pid!);
      void redisCpuUs(admin).then((cpuAfter) => resolve({ rate: n / wall, redisUs: (cpuAfter - cpuBefore) / n, rss }));
    }),
  );
  admin.disconnect();
  worker.kill('SIGTERM');
  await new Promise((resolve) => worker.once('exit', resolve));
  await server.stop();
  return result;
}

const medians: { count: number; rate: number; redisUs: number }[] = [];
for (const count of queueCounts) {
  const rates: number[] = [];
  const costs: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const { rate, redisUs, rss } = await drain(count);
    rates.push(rate);
    costs.push(redisUs);
    console.log(
      `${count} queues: ${Math.round(rate)} runs/s, Redis ${redisUs.toFixed(1)} µs/run, worker RSS ${rss.toFixed(0)} MB`,
    );
  }
  medians.push({ count, rate: median(rates), redisUs: median(costs) });
}
for (const { count, rate, redisUs } of medians) {
  const ratio = rate / medians[0]!.rate;
  console.log(
    `${String(count).padStart(4)} queues: median ${Math.round(rate)} runs/s (${ratio.toFixed(2)}×), Redis ${redisUs.toFixed(1)} µs/run`,
  );
}
