import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { MEMORY_SUBJECTS, type MemorySubject } from './memory-subjects.js';
import { enqueueInBulk } from './tool-support.js';
import { WorkerLink } from './worker-link.js';

/** Redis memory a run costs, in bytes of `used_memory` per run. */
export interface MemoryResult {
  /** After the bulk enqueue of N runs, before any worker ran. */
  readonly pendingBytesPerRun: number;
  /** After a worker finished the N runs and stopped, its result kept as the system keeps it by default. */
  readonly finishedBytesPerRun: number;
}

/** The memory row: N runs per system, by system key. */
export interface MemoryRow {
  readonly n: number;
  readonly results: Readonly<Record<string, MemoryResult>>;
}

/** Calls of the bulk API that fill the queue, as the bulk phase makes them. */
const BULK_SIZE = 1_000;
/** How long Redis is left alone before `used_memory` is read: closed clients freed, the last replies sent. */
const SETTLE_MS = 1_000;
/** The drain's deadline: BullMQ and bee-queue finish 100,000 runs in well under a minute here. */
const DRAIN_TIMEOUT_MS = 600_000;
/** The concurrency every system of the row runs with, as the throughput rows'. */
const CONCURRENCY = 100;

/**
 * The memory row's redis-server options. Redis 7 keeps a latency histogram
 * per command (`latency-tracking`, on by default), about 25 KB each, made the
 * first time the server runs that command and kept through FLUSHALL: with it
 * on, the first system measured paid for the histograms of every command the
 * systems after it used too (a quarter of a megabyte: 2 bytes a run of
 * 100,000), and the row depended on the order of the systems. Off, each
 * system's growth is its own keys and scripts.
 */
export const MEMORY_SERVER_OPTIONS = { args: ['--latency-tracking', 'no'] };

/** Redis's `used_memory` (bytes), once Redis has settled. */
export async function settledMemory(redis: Redis): Promise<number> {
  await delay(SETTLE_MS);
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1]);
}

/**
 * What the anatomy tool looks at in each state the row measures; `grown` is
 * the growth of `used_memory` since before the enqueue, in bytes.
 */
export interface MemoryHooks {
  /** With the N runs pending, the producer closed. */
  pending?(redis: Redis, grown: number): Promise<void>;
  /** With the N runs finished, the worker stopped. */
  finished?(redis: Redis, grown: number): Promise<void>;
}

/**
 * One system's memory per run: from an empty Redis (FLUSHALL and SCRIPT FLUSH,
 * so each system also pays for loading its own scripts, a fixed cost that N
 * runs share), N runs of the benchmark's payload enqueued in bulk, then
 * drained by one worker process at the system's defaults. Memory is read
 * with only this client and the system's counter connected, so neither the
 * producer's nor the worker's connections weigh on it.
 * @throws when the worker does not finish the N runs within DRAIN_TIMEOUT_MS
 */
export async function measureMemory(
  subject: MemorySubject,
  url: string,
  redis: Redis,
  n: number,
  hooks: MemoryHooks = {},
): Promise<MemoryResult> {
  await redis.flushall();
  await redis.script('FLUSH');
  const counter = await subject.counter(url);
  let worker: WorkerLink | undefined;
  try {
    const before = await settledMemory(redis);
    const producer = await subject.producer(url);
    try {
      await enqueueInBulk(producer, n, BULK_SIZE);
    } finally {
      await producer.close();
    }
    const pending = await settledMemory(redis);
    await hooks.pending?.(redis, pending - before);

    worker = await WorkerLink.start('defaults-worker.js', 1, {
      REDIS_URL: url,
      BENCH_SYSTEM: subject.worker,
      BENCH_CONCURRENCY: String(CONCURRENCY),
    });
    await worker.waitForCount(n, DRAIN_TIMEOUT_MS);
    // The handler's last call comes before the system stores its outcome: wait for the system's own count.
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while ((await counter.finished()) < n) {
      if (Date.now() > deadline) throw new Error(`the worker did not record ${n} runs finished in time`);
      await delay(50);
    }
    await worker.stop();
    worker = undefined;
    const finished = await settledMemory(redis);
    await hooks.finished?.(redis, finished - before);
    return { pendingBytesPerRun: (pending - before) / n, finishedBytesPerRun: (finished - before) / n };
  } finally {
    await worker?.stop();
    await counter.close();
  }
}

/**
 * The memory row for the systems of `keys` that have a memory subject (the
 * others are skipped), one after the other on a redis-server of its own
 * without AOF: the figure does not depend on persistence, and the throughput
 * servers keep their state.
 */
export async function runMemoryRow(
  keys: readonly string[],
  n: number,
  onSystem: (key: string) => void = () => undefined,
): Promise<MemoryRow> {
  const results: Record<string, MemoryResult> = {};
  const server = await RedisServer.start(MEMORY_SERVER_OPTIONS);
  const redis = new Redis(server.url);
  try {
    for (const key of keys) {
      const subject = MEMORY_SUBJECTS[key];
      if (!subject) continue;
      onSystem(key);
      results[key] = await measureMemory(subject, server.url, redis, n);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  return { n, results };
}
