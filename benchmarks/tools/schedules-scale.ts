/**
 * What many schedules cost a pool: the supervisor's RSS (it runs the broker,
 * and so the schedules), the time its broker takes to plan them, Redis's CPU
 * meanwhile, and how late a due slot of another schedule fires meanwhile.
 *
 * Run: `node dist/benchmarks/tools/schedules-scale.js [counts=1000,10000,100000]` after `npm run build`.
 *
 * Per count, on a fresh Redis: `TaskScheduler.upsert` makes a probe schedule
 * (`everyMs: 1000`) and `count` tenant schedules (a daily `0 3 * * *` in
 * `Europe/Berlin` each, as `docs/schedules.md`'s per-tenant example); then
 * `runWorker --workers 1` starts (`workers/schedules-pool.ts`) and plans them
 * all. Sampled every 100 ms until every schedule is planned: the supervisor's
 * RSS (/proc), the schedules left to plan, the probe's lateness (Redis clock:
 * a fired slot's `lastAt - lastSlot`, or how long its due slot has waited).
 * RSS is read again 3 s after planning ended. Last, one declaration of a
 * process's code schedules (`lua/schedule-declare.lua`, which every broker
 * calls each minute) is timed on its own: it reads every schedule.
 */
import { NestFactory } from '@nestjs/core';
import { TaskScheduler } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { libraryBuild, loadModule, redisCpuUs } from '../lib/tool-support.js';
import { schedulesApp } from '../workers/schedules-app.js';

const counts = (process.argv[2] ?? '1000,10000,100000').split(',').map(Number);
/** Longest a pool may take to plan one count before the tool gives up on it. */
const PLAN_TIMEOUT_MS = 600_000;
const PROBE = '0-probe';
const [{ RedisKeys }, { LUA_SOURCES }] = await Promise.all([
  loadModule(libraryBuild(), 'backend/redis/redis-keys.js'),
  loadModule(libraryBuild(), 'backend/redis/scripts/lua-sources.generated.js'),
]);
const keys = new RedisKeys('sched');

interface Row {
  readonly count: number;
  /** The supervisor's RSS 3 s after planning ended (MB), or null when it died. */
  readonly rssMb: number | null;
  readonly peakRssMb: number;
  /** From the probe's first plan to the last schedule planned (s). */
  readonly planS: number;
  /** Redis CPU (user + sys) from the pool's start to the end of planning (s), and as a share of that time. */
  readonly redisCpuS: number;
  readonly redisCpuShare: number;
  /** The probe's worst lateness while the others were planned (ms). */
  readonly probeLateMs: number;
  /** One declaration call with no code schedules, for the pool's queue (ms). */
  readonly declareMs: number;
  /** Growth of Redis's used_memory per schedule, from before they were made to the end of planning (bytes). */
  readonly redisBytesPerSchedule: number;
  /** What ended the pool early, if anything. */
  readonly died: string | null;
}

/** A process's resident set (MB), or null once it is gone. */
function rssMb(pid: number): number | null {
  try {
    const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/** Redis's used_memory (bytes). */
async function usedMemory(redis: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1]);
}

/** Makes the probe and `count` tenant schedules through the application's `TaskScheduler`. */
async function makeSchedules(url: string, count: number): Promise<void> {
  const app = await NestFactory.createApplicationContext(schedulesApp(url), { logger: ['error'] });
  const scheduler = app.get(TaskScheduler);
  await scheduler.upsert(PROBE, { task: 'reports.refresh', args: ['probe'], everyMs: 1_000 });
  const chunk = 500;
  for (let first = 0; first < count; first += chunk) {
    await Promise.all(
      Array.from({ length: Math.min(chunk, count - first) }, (_, i) =>
        scheduler.upsert(`nightly-tenant-${first + i}`, {
          task: 'reports.refresh',
          args: [`tenant-${first + i}`],
          cron: '0 3 * * *',
          tz: 'Europe/Berlin',
          catchUp: 'latest',
        }),
      ),
    );
  }
  await app.close();
}

/** The probe's lateness now (ms, Redis clock), or null while it is not planned. */
async function probeLateness(redis: Redis): Promise<number | null> {
  const [[, time], [, fields]] = (await redis
    .multi()
    .time()
    .hmget(keys.schedule(PROBE), 'next', 'lastSlot', 'lastAt')
    .exec()) as [[null, [string, string]], [null, (string | null)[]]];
  const now = Number(time[0]) * 1_000 + Math.floor(Number(time[1]) / 1_000);
  const [next, lastSlot, lastAt] = fields;
  if (!next || next === 'end') return null;
  const fired = lastSlot && lastAt ? Number(lastAt) - Number(lastSlot) : 0;
  return Math.max(fired, now - Number(next));
}

async function measure(count: number): Promise<Row> {
  const server = await RedisServer.start();
  const redis = new Redis(server.url);
  let pool: ChildProcess | undefined;
  try {
    const memoryBefore = await usedMemory(redis);
    await makeSchedules(server.url, count);
    const cpuBefore = await redisCpuUs(redis);
    const startedAt = performance.now();
    pool = fork(fileURLToPath(new URL('../workers/schedules-pool.js', import.meta.url)), [], {
      env: { ...process.env, REDIS_URL: server.url },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let died: string | null = null;
    let stderr = '';
    pool.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
    pool.on('exit', (code, signal) => {
      died = /heap out of memory/.test(stderr) ? 'heap out of memory' : `exit ${code ?? signal}`;
    });
    let peak = 0;
    let probePlannedAt: number | null = null;
    let late = 0;
    let plannedAt = NaN;
    while (performance.now() - startedAt < PLAN_TIMEOUT_MS) {
      await delay(100);
      peak = Math.max(peak, rssMb(pool.pid!) ?? 0);
      const lateness = await probeLateness(redis);
      if (lateness !== null) {
        probePlannedAt ??= performance.now();
        late = Math.max(late, lateness);
      }
      const toPlan = await redis.zcount(keys.schedules, 0, 0);
      if (died || (probePlannedAt !== null && toPlan === 0)) {
        plannedAt = performance.now();
        break;
      }
    }
    const redisCpuS = ((await redisCpuUs(redis)) - cpuBefore) / 1e6;
    const redisBytesPerSchedule = ((await usedMemory(redis)) - memoryBefore) / (count + 1);
    const elapsedS = (plannedAt - startedAt) / 1_000;
    await delay(3_000);
    const rss = died ? null : rssMb(pool.pid!);
    const declareAt = performance.now();
    const declareKeys = [keys.schedules, keys.schedulePrefix, keys.brokerWake, keys.codeSchedules];
    await redis.eval(LUA_SOURCES.scheduleDeclare, declareKeys.length, ...declareKeys, 300_000, 1, 'bench');
    const declareMs = performance.now() - declareAt;
    return {
      count,
      rssMb: rss,
      peakRssMb: Math.max(peak, rss ?? 0),
      planS: (plannedAt - (probePlannedAt ?? startedAt)) / 1_000,
      redisCpuS,
      redisCpuShare: redisCpuS / elapsedS,
      probeLateMs: late,
      declareMs,
      redisBytesPerSchedule,
      died,
    };
  } finally {
    if (pool && pool.exitCode === null && pool.signalCode === null) {
      const exited = new Promise((resolve) => pool!.once('exit', resolve));
      pool.kill('SIGTERM');
      await exited;
    }
    redis.disconnect();
    await server.stop();
  }
}

const rows: Row[] = [];
for (const count of counts) {
  rows.push(await measure(count));
  console.error(JSON.stringify(rows.at(-1)));
}
const f = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits });
console.log(
  '| schedules | supervisor RSS (MB) | peak RSS (MB) | time to plan (s) | Redis CPU while planning ' +
    '| probe slot late by (ms) | one declaration (ms) |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const rss = r.rssMb === null ? `died: ${r.died}` : f(r.rssMb);
  const cpu = `${f(r.redisCpuS, 1)} s (${f(r.redisCpuShare * 100)}%)`;
  const late = f(r.probeLateMs);
  console.log(
    `| ${f(r.count)} | ${rss} | ${f(r.peakRssMb)} | ${f(r.planS, 1)} | ${cpu} | ${late} | ${f(r.declareMs)} |`,
  );
}
process.exit(0);
