/**
 * What the profiling tools of `benchmarks/tools/` share: the library build
 * they measure, the benchmark's run as the backend stores it, a fresh Redis
 * placed on a CPU of its own, and the figures they read from Redis.
 */
import type * as Api from '@threadmill/nestjs';
import type { RedisServer } from '@threadmill/nestjs/testing';
import type { Redis } from 'ioredis';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as CreateBackend from '../../libs/threadmill/src/backend/partitioned/create-backend.js';
import type * as Connections from '../../libs/threadmill/src/backend/redis/redis-connections.js';
import type * as Keys from '../../libs/threadmill/src/backend/redis/redis-keys.js';
import type * as Backend from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import type * as EnqueueArgs from '../../libs/threadmill/src/backend/redis/scripts/enqueue-args.js';
import type * as LuaSources from '../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import type * as Scripts from '../../libs/threadmill/src/backend/redis/scripts/redis-scripts.js';
import type * as ScriptKeys from '../../libs/threadmill/src/backend/redis/scripts/script-keys.js';
import type { NewRun } from '../../libs/threadmill/src/backend/task-backend.js';
import type * as RunId from '../../libs/threadmill/src/codec/run-id.js';
import type * as Coalescer from '../../libs/threadmill/src/queue/store-coalescer.js';
import type * as Queue from '../../libs/threadmill/src/queue/task-queue.js';
import { payload } from '../workers/protocol.js';
import { CpuPlacement } from './cpu-placement.js';
import type { Producer } from './producers.js';

/**
 * The modules of a library build the tools load, by their path in the build
 * (the same as in `libs/threadmill/src`), typed by this checkout's source.
 */
interface LibraryModules {
  'index.js': typeof Api;
  'backend/partitioned/create-backend.js': typeof CreateBackend;
  'backend/redis/redis-connections.js': typeof Connections;
  'backend/redis/redis-keys.js': typeof Keys;
  'backend/redis/redis.backend.js': typeof Backend;
  'backend/redis/scripts/enqueue-args.js': typeof EnqueueArgs;
  'backend/redis/scripts/lua-sources.generated.js': typeof LuaSources;
  'backend/redis/scripts/redis-scripts.js': typeof Scripts;
  'backend/redis/scripts/script-keys.js': typeof ScriptKeys;
  'codec/run-id.js': typeof RunId;
  'queue/store-coalescer.js': typeof Coalescer;
  'queue/task-queue.js': typeof Queue;
}

/**
 * The directory of a built library: `dir` (a copy of `libs/threadmill/dist`
 * from another commit, say), or the build that `@threadmill/nestjs` resolves
 * to, this checkout's after `npm run build`.
 */
export function libraryBuild(dir?: string): string {
  return dir ? resolve(dir) : dirname(fileURLToPath(import.meta.resolve('@threadmill/nestjs')));
}

/**
 * One module of the library build in `build`. With this checkout's build it is
 * the very module instance that `@threadmill/nestjs` uses, so a tool may wrap
 * its methods. Another commit's build may differ from the types.
 */
export function loadModule<P extends keyof LibraryModules>(build: string, path: P): Promise<LibraryModules[P]> {
  return import(pathToFileURL(join(build, path)).href) as Promise<LibraryModules[P]>;
}

/**
 * The run a backend-level tool stores: the benchmark's no-op task on queue
 * `bench` with its ~40-byte payload, encoded as `TaskQueue` encodes it.
 * `newRunId` comes from the build the tool measures.
 */
export function benchRun(newRunId: () => string, i: number): NewRun {
  return {
    id: newRunId(),
    queue: 'bench',
    priority: 0,
    runAt: 0,
    delayMs: 0,
    leaseTtlMs: 0,
    idempotent: false,
    singleLine: true,
    payload: `["bench.noop",[{"id":${i},"email":"user${i}@example.com"}]]`,
  };
}

/** The enqueue script as the backend calls it, for tools that call it themselves. */
export interface EnqueueScript {
  readonly source: string;
  /** Its KEYS for a store into queue `bench` of keyspace `alias`. */
  keys(alias: string): string[];
  /** Its ARGV for a call of `runs` (of queue `bench`, generated ids). */
  args(runs: readonly NewRun[]): (string | number)[];
}

/** The enqueue script of the library build in `build`. */
export async function enqueueScript(build: string): Promise<EnqueueScript> {
  const [{ LUA_SOURCES }, { encodeStore }, { RedisKeys }, { ScriptKeys }] = await Promise.all([
    loadModule(build, 'backend/redis/scripts/lua-sources.generated.js'),
    loadModule(build, 'backend/redis/scripts/enqueue-args.js'),
    loadModule(build, 'backend/redis/redis-keys.js'),
    loadModule(build, 'backend/redis/scripts/script-keys.js'),
  ]);
  return {
    source: LUA_SOURCES.enqueue,
    keys: (alias) => {
      const keys = new RedisKeys(alias);
      // A call of generated ids records nothing: its record slot is passed, never written.
      return new ScriptKeys(keys).enqueue(['bench'], keys.lastCall('tool', 0));
    },
    args: (runs) => encodeStore('', ['bench'], runs, () => 1),
  };
}

/** Enqueues the benchmark's payloads 0..n-1 through `producer`'s bulk API, `size` a call. */
export async function enqueueInBulk(producer: Pick<Producer, 'enqueueBulk'>, n: number, size = 1_000): Promise<void> {
  for (let first = 0; first < n; first += size) {
    await producer.enqueueBulk(Array.from({ length: Math.min(size, n - first) }, (_, i) => payload(first + i)));
  }
}

/**
 * With PIN=1 in the environment, Redis and this process on CPUs of their own,
 * as `npm run bench` places them; returns the placement, or undefined without PIN.
 * @throws when PIN=1 and the machine has fewer than 2 CPUs or no `taskset`
 */
export function pinFromEnv(server: RedisServer): CpuPlacement | undefined {
  if (!process.env['PIN']) return undefined;
  const placement = CpuPlacement.plan();
  if (!placement) throw new Error('PIN=1 needs 2 CPUs or more and taskset: run without PIN.');
  CpuPlacement.bind(server.pid!, placement.redis);
  CpuPlacement.bind(process.pid, placement.bench);
  return placement;
}

/** The middle value (the upper one of an even count). */
export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

/** Microseconds Redis spent in `command` since the last `CONFIG RESETSTAT` (INFO commandstats). */
export async function commandUs(redis: Redis, command = 'evalsha'): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=\\d+,usec=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

/**
 * Redis's CPU time so far, user and system, in µs (INFO cpu): of the whole
 * process, or with `mainThread` of the thread that runs commands only.
 */
export async function redisCpuUs(redis: Redis, { mainThread = false } = {}): Promise<number> {
  const info = await redis.info('cpu');
  const suffix = mainThread ? '_main_thread' : '';
  const field = (name: string) => Number(new RegExp(`^${name}${suffix}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** The environment of a benchmark Threadmill worker (`workers/threadmill-worker.js`) on `redisUrl`'s `bench` queue. */
export function benchWorkerEnv(redisUrl: string, concurrency: number): NodeJS.ProcessEnv {
  return {
    ...process.env,
    REDIS_URL: redisUrl,
    BENCH_QUEUE: 'bench',
    BENCH_CONCURRENCY: String(concurrency),
    THREADMILL_POOL_SLOT: '0',
  };
}
