/**
 * How the scale suite's cases measure: Redis's CPU and memory (INFO), the
 * latency of a client's calls, and a process's resident set.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { redisCpuUs } from '../lib/tool-support.js';
import type { ScaleRow } from './scale-case.js';

/** A fresh redis-server (AOF off, a directory of its own) and an admin connection to read it. */
export class ScaleRedis {
  private constructor(
    readonly server: RedisServer,
    readonly admin: Redis,
  ) {}

  static async start(): Promise<ScaleRedis> {
    const server = await RedisServer.start({ appendonly: false });
    return new ScaleRedis(server, new Redis(server.url));
  }

  get url(): string {
    return this.server.url;
  }

  cpuUs(): Promise<number> {
    return redisCpuUs(this.admin);
  }

  async usedMemory(): Promise<number> {
    return Number(/^used_memory:(\d+)/m.exec(await this.admin.info('memory'))?.[1]);
  }

  async stop(): Promise<void> {
    this.admin.disconnect();
    await this.server.stop();
  }
}

/** The value at quantile `q` of `sorted` (ascending), or undefined when empty. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** p50 and p99 of `samples` (ms). */
export function percentiles(samples: readonly number[]): Pick<ScaleRow, 'p50Ms' | 'p99Ms'> {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99) };
}

/**
 * Calls `call(i)` for i in 0..calls-1, one at a time, and returns the row of
 * the operation: `units(i)` units a call (runs of a batch, say; 1 unless
 * given), ops/s and Redis CPU per unit, latency per call.
 */
export async function timeCalls(
  redis: ScaleRedis,
  size: number,
  operation: string,
  calls: number,
  call: (i: number) => Promise<unknown>,
  units: (i: number, reply: unknown) => number = () => 1,
): Promise<ScaleRow> {
  return (
    await timeCallsUntil(
      redis,
      size,
      () => operation,
      calls,
      call,
      units,
      () => false,
    )
  ).row;
}

/**
 * As {@link timeCalls}, but stops early once `done(units so far)`; the
 * operation is named knowing how many calls were made.
 */
export async function timeCallsUntil(
  redis: ScaleRedis,
  size: number,
  operation: (calls: number) => string,
  maxCalls: number,
  call: (i: number) => Promise<unknown>,
  units: (i: number, reply: unknown) => number,
  done: (total: number) => boolean,
): Promise<{ row: ScaleRow; calls: number; total: number }> {
  const latencies: number[] = [];
  let total = 0;
  const cpuBefore = await redis.cpuUs();
  const began = performance.now();
  let calls = 0;
  while (calls < maxCalls && !done(total)) {
    const sent = performance.now();
    const reply = await call(calls);
    latencies.push(performance.now() - sent);
    total += units(calls, reply);
    calls++;
  }
  const wallS = (performance.now() - began) / 1_000;
  const cpu = (await redis.cpuUs()) - cpuBefore;
  const row: ScaleRow = {
    size,
    operation: operation(calls),
    opsPerS: total / wallS,
    redisUsPerOp: total > 0 ? cpu / total : undefined,
    ...percentiles(latencies),
  };
  return { row, calls, total };
}

/** A process's resident set (MB), or undefined once it is gone. */
export function rssMb(pid: number = process.pid): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** `count` items `make(i)` in calls of `size`, for enqueueMany. */
export function chunks<T>(count: number, make: (i: number) => T, size = 1_000): T[][] {
  const out: T[][] = [];
  for (let first = 0; first < count; first += size) {
    out.push(Array.from({ length: Math.min(size, count - first) }, (_, i) => make(first + i)));
  }
  return out;
}
