import type { Type } from '@nestjs/common';
import type { TaskContext } from '../task/task-context.js';
import type { TaskContract } from '../task/task-contract.js';

/** Options of one enqueue; each overrides the task's `@Task()` setting for this run. */
export interface EnqueueOptions {
  /** Do not start before this time (at most 100 years from now). Exclusive with `delayMs`. */
  runAfter?: Date;
  /** Do not start before this many ms from now (Redis clock), at most 100 years. Exclusive with `runAfter`. */
  delayMs?: number;
  /** -100..100, higher runs first. @defaultValue the task's priority */
  priority?: number;
  /** A queue of the module's `queues`. @defaultValue the task's queue */
  queue?: string;
  /**
   * A caller-chosen run id (1-200 characters, any characters). Enqueuing an id that is
   * already stored stores nothing and returns the stored run, so a producer
   * can retry an enqueue safely. An id is free again once its result expires.
   * @defaultValue a new ULID
   */
  id?: string;
  /**
   * Register the run for `TaskQueue.waitFor` before it is stored, so that a
   * `waitFor` in this process gets its result even when it settles before
   * the call, and even when results are not kept (`resultTtlMs: 0`: then
   * this is the only way to wait for a run). The process holds an outcome
   * nobody waited for yet for five minutes. Costs a round trip at enqueue
   * and an entry in Redis when the run settles; leave it off for runs
   * nobody waits for.
   * @defaultValue false
   */
  waitable?: boolean;
  /**
   * Deduplicate this run by a key of the caller's, scoped to the run's queue
   * (see docs/deduplication.md): when the key holds a run, nothing is stored
   * and the result is that run's, with `deduplicated: true`. Not with `id`
   * nor `waitable`.
   */
  dedupe?: DedupeOptions;
  /**
   * Routes the run on a partitioned backend (`partitions` above 1, see
   * docs/scale-out.md): runs of one key go to one partition, so they keep
   * their order (priority, then FIFO) among themselves, as a queue's runs do
   * on a backend of one partition. 1-200 characters; not with `id` nor
   * `dedupe` (each routes its run by itself). A backend of one partition
   * ignores it.
   * @defaultValue none: runs are spread round-robin
   */
  partitionKey?: string;
}

/** How an enqueue is deduplicated (`EnqueueOptions.dedupe`). */
export interface DedupeOptions {
  /** 1-200 characters, any; one namespace per queue, apart from run ids. */
  key: string;
  /**
   * `'drop'`: while the key holds a run, an enqueue with it stores nothing
   * and returns that run. `'debounce'`: while the key's run waits out its
   * deferral, an enqueue with it gives that run its arguments and pushes it
   * back by `ttlMs` (at most to `maxWaitMs` after its first enqueue); once it
   * is due or started, the next enqueue stores a new run.
   * @defaultValue 'drop'
   */
  mode?: 'drop' | 'debounce';
  /**
   * drop: the key also holds for this many ms after its run's enqueue,
   * whatever the run's state (a throttle). debounce (required): the quiet
   * period, how long after the latest enqueue the run becomes due.
   * @defaultValue 0 (drop)
   */
  ttlMs?: number;
  /**
   * debounce only: the latest a run is pushed back to, in ms after its first
   * enqueue (at least `ttlMs`).
   * @defaultValue no cap
   */
  maxWaitMs?: number;
  /**
   * drop only: the key holds while its run waits for its start (`'start'`)
   * or until it finishes (`'finish'`: SUCCESSFUL, FAILED, QUARANTINED or CANCELLED),
   * and in either case while `ttlMs` lasts. A run that is removed releases it.
   * @defaultValue 'start'
   */
  releaseOn?: 'start' | 'finish';
}

/** Options of one `enqueueMany` call as a whole. */
export interface EnqueueManyOptions {
  /**
   * `true`: one script call stores every run or none, after every item is
   * validated. `false`: the items are validated, encoded and stored in
   * chunks of 128 (each chunk all or nothing), Redis storing one chunk while
   * the producer prepares the next: faster for large calls, and no call
   * holds Redis for longer than a chunk takes. Unknown tasks and arguments
   * that do not fit their task's signature (count, primitive types, missing
   * DTOs) refuse the whole call before anything is stored; any other
   * invalid item (a DTO that fails validation, a bad option) or a Redis
   * failure stops the call with an `EnqueueIncompleteError` listing the
   * runs stored before it.
   * @defaultValue true
   */
  atomic?: boolean;
}

/** Names of the methods of `T`. */
export type MethodName<T> = {
  [K in keyof T]: T[K] extends (...args: any[]) => unknown ? K : never;
}[keyof T] &
  string;

/**
 * What a producer passes for a parameter of type `T`: DTO classes as plain
 * objects of their data (methods are not stored; the worker rehydrates the
 * class), everything else as is.
 */
export type Plain<T> = T extends Date | string | number | boolean | bigint | symbol | null | undefined
  ? T
  : T extends readonly (infer E)[]
    ? Plain<E>[]
    : T extends object
      ? { [K in keyof T as T[K] extends (...args: any[]) => any ? never : K]: Plain<T[K]> }
      : T;

type PlainEach<P extends unknown[]> = { [I in keyof P]: Plain<P[I]> };

/** The arguments a producer passes for method `F`: its parameters without a trailing `TaskContext`. */
export type TaskArgs<F> = F extends (...args: infer P) => unknown
  ? P extends [...infer Head, TaskContext]
    ? PlainEach<Head>
    : PlainEach<P>
  : never;

/** What method `F` resolves to. */
export type TaskReturn<F> = F extends (...args: any[]) => infer R ? Awaited<R> : unknown;

/** One run of `enqueueMany`, naming its task by name... */
export interface EnqueueByName extends EnqueueOptions {
  task: string;
  args: readonly unknown[];
}

/** ...or by class and method. */
export interface EnqueueByMethod<T = any> extends EnqueueOptions {
  task: Type<T>;
  method: MethodName<T>;
  args: readonly unknown[];
}

/** ...or by contract (see `defineTask`), its arguments typed. */
export interface EnqueueByContract<A extends readonly unknown[] = any, R = unknown> extends EnqueueOptions {
  task: TaskContract<A, R>;
  args: A;
}

export type EnqueueManyItem = EnqueueByName | EnqueueByMethod | EnqueueByContract;
