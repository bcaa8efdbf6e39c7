/**
 * Whether slow runs wait in a busy process while another process idles: a pool
 * of 4 processes (default settings unless flags are given) drains N runs that
 * sleep 50–200 ms each, and the tool reports, from a witness log the tasks
 * write themselves, the worst time a run held by one process waited unstarted
 * while another process had a free slot, in units of the run's own duration,
 * and enqueue-to-start p50/p99.
 *
 * Run: `node dist/benchmarks/tools/slow-fairness.js [N=800] [-- <worker flags>]` after `npm run build`,
 * e.g. `-- --prefetch 2` for the fixed prefetch of before.
 */
import { defineTask } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { TaskQueue, ThreadmillModule } from '@threadmill/nestjs';

const separator = process.argv.indexOf('--');
const [n = 800] = process.argv.slice(2, separator < 0 ? undefined : separator).map(Number);
const flags = separator < 0 ? [] : process.argv.slice(separator + 1);
const WORKERS = 4;
const CONCURRENCY = Number(flags[flags.indexOf('--concurrency') + 1] ?? 10) || 10;
const Slow = defineTask<[ms: number], void>('bench.slow', { queue: 'bench' });

const server = await RedisServer.start();
const redis = new Redis(server.url);
const backend = { connection: server.url, alias: 'bench', queues: ['bench'] };
@Module({ imports: [ThreadmillModule.forRoot(backend)] })
class ProducerModule {}
const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error'] });
const queue = app.get(TaskQueue);

const durations = Array.from({ length: n }, () => 50 + Math.floor(Math.random() * 151));
const pool = spawn(
  process.execPath,
  [fileURLToPath(new URL('../workers/slow-worker.js', import.meta.url)), '--workers', String(WORKERS), ...flags],
  { env: { ...process.env, REDIS_URL: server.url }, stdio: ['ignore', 'ignore', 'inherit'] },
);
// Enqueued while the pool starts, as a burst.
const runs = await queue.enqueueMany(durations.map((ms) => ({ task: Slow, args: [ms] })));
while ((await redis.llen('witness:slow')) < n) await delay(200);
pool.kill('SIGTERM');

interface Execution {
  readonly pid: number;
  readonly start: number;
  readonly end: number;
}
const executions = new Map<string, Execution>();
for (const line of await redis.lrange('witness:slow', 0, -1)) {
  const [pid, start, end, id] = line.split(' ');
  executions.set(id!, { pid: Number(pid), start: Number(start), end: Number(end) });
}
const results = await queue.getResults(runs.map((run) => run.id));
const pids = [...new Set([...executions.values()].map((e) => e.pid))];
/** When each process started its first run: before that it was booting, not idling. */
const upAt = new Map<number, number>();
for (const e of executions.values()) upAt.set(e.pid, Math.min(upAt.get(e.pid) ?? Infinity, e.start));
/** Runs executing in process `pid` at time `t`. */
const runningAt = (pid: number, t: number): number => {
  let count = 0;
  for (const e of executions.values()) if (e.pid === pid && e.start <= t && t < e.end) count++;
  return count;
};
let worst = 0;
let worstRatio = 0;
const startDelays: number[] = [];
for (const result of results) {
  const execution = executions.get(result!.id)!;
  startDelays.push(execution.start - result!.enqueuedAt.getTime());
  const claimedAt = result!.lastAttemptedAt!.getTime();
  // Time this run waited unstarted in its process while another process had a free slot (10 ms steps).
  let idleWait = 0;
  for (let t = claimedAt; t < execution.start; t += 10) {
    const idles = (pid: number) => pid !== execution.pid && t >= upAt.get(pid)! && runningAt(pid, t) < CONCURRENCY;
    if (pids.some(idles)) idleWait += 10;
  }
  const duration = execution.end - execution.start;
  if (idleWait > worst) worst = idleWait;
  if (idleWait / duration > worstRatio) worstRatio = idleWait / duration;
}
startDelays.sort((a, b) => a - b);
const pct = (p: number) =>
  startDelays[Math.min(startDelays.length - 1, Math.ceil((p / 100) * startDelays.length) - 1)]!;
console.log(
  `flags: ${flags.join(' ') || '(defaults)'}; ${n} runs of 50–200 ms, ${WORKERS} processes × ${CONCURRENCY} slots`,
);
console.log(
  `worst wait unstarted while another process had a free slot: ${worst} ms (${worstRatio.toFixed(2)}× the run's duration)`,
);
console.log(`enqueue-to-start p50 ${pct(50).toFixed(0)} ms, p99 ${pct(99).toFixed(0)} ms`);
await app.close();
redis.disconnect();
await server.stop();
