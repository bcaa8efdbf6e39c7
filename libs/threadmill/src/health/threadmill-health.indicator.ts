import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { mismatchMessage } from '../backend/partitioned/partition-record.js';
import type { TaskInspector } from '../inspector/task-inspector.js';
import { inspectorOf } from '../module/backend-lookup.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';

/** Options of {@link ThreadmillHealthIndicator.isRedisReachable}. */
export interface RedisCheckOptions {
  /**
   * The backend to check: the `name` of one of the application's `ThreadmillModule`s.
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Down when Redis has not answered within this time.
   * @defaultValue `1000`
   */
  timeoutMs?: number;
}

/** Options of {@link ThreadmillHealthIndicator.areWorkersAlive}. */
export interface WorkersCheckOptions extends RedisCheckOptions {
  /**
   * Queues that must be consumed.
   * @defaultValue every queue of the backend
   */
  queues?: readonly string[];
  /**
   * Live worker processes each queue needs.
   * @defaultValue `1`
   */
  minimum?: number;
}

/** Options of {@link ThreadmillHealthIndicator.isQueueAgeUnder}. */
export interface QueueAgeCheckOptions extends RedisCheckOptions {
  /**
   * Queues to check.
   * @defaultValue every queue of the backend
   */
  queues?: readonly string[];
}

/**
 * `@nestjs/terminus` health indicators for Threadmill: Redis answers, worker
 * processes are alive for the queues (by their heartbeats), no ready run
 * has waited longer than a threshold (the queue is being consumed fast
 * enough), and every process of a partitioned backend has the same count. Each reads a few keys; none touches the hot path. Each checks the
 * default backend, or the one its `backend` option names.
 *
 * @example
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([
 *     () => this.threadmill.isRedisReachable('redis'),
 *     () => this.threadmill.areWorkersAlive('workers'),
 *     () => this.threadmill.isQueueAgeUnder('queues', 60_000),
 *   ]);
 * }
 * ```
 */
@Injectable()
export class ThreadmillHealthIndicator {
  private readonly inspectors = new Map<string, TaskInspector>();

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** @throws ThreadmillConfigError for a backend no module declares: a misconfigured check, not a down one */
  private inspector(backend = DEFAULT_BACKEND): TaskInspector {
    let inspector = this.inspectors.get(backend);
    if (!inspector) {
      inspector = inspectorOf(this.moduleRef, backend, 'ThreadmillHealthIndicator');
      this.inspectors.set(backend, inspector);
    }
    return inspector;
  }

  /** Up with the round-trip time when Redis answers a PING in time; down otherwise. */
  isRedisReachable<const Key extends string>(
    key: Key,
    { backend, timeoutMs = 1_000 }: RedisCheckOptions = {},
  ): PromiseLike<HealthIndicatorResult<Key>> {
    const inspector = this.inspector(backend);
    return this.indicators
      .check(key)
      .attempt(async () => ({ latencyMs: Math.round((await inspector.ping()) * 100) / 100 }))
      .withTimeout(timeoutMs);
  }

  /** Down when a queue has fewer than `minimum` live worker processes consuming it. */
  async areWorkersAlive<const Key extends string>(
    key: Key,
    { backend, queues, minimum = 1, timeoutMs = 1_000 }: WorkersCheckOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const inspector = this.inspector(backend);
    const indicator = this.indicators.check(key);
    try {
      const [workers, names] = await within(
        timeoutMs,
        Promise.all([inspector.liveWorkers(), queues ?? inspector.queues()]),
      );
      const perQueue = Object.fromEntries(
        names.map((queue) => [queue, workers.filter((worker) => worker.queues.includes(queue)).length]),
      );
      const short = names.filter((queue) => perQueue[queue]! < minimum);
      if (short.length === 0) return indicator.up({ workers: perQueue });
      return indicator.down({
        workers: perQueue,
        message: `Queue(s) ${short.join(', ')} have fewer than ${minimum} live worker process(es); start or fix the worker pool.`,
      });
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }

  /**
   * Down when processes of a partitioned backend run with different
   * `partitions` counts (seen within the last minute; docs/scale-out.md):
   * nothing is lost, as every worker consumes every partition that may hold
   * runs, but new runs are routed differently until every process has the
   * same count. Reads this process's view, refreshed every 15 s: no call to
   * Redis. A backend of one partition is up.
   */
  arePartitionsConsistent<const Key extends string>(
    key: Key,
    { backend }: Pick<RedisCheckOptions, 'backend'> = {},
  ): HealthIndicatorResult<Key> {
    const indicator = this.indicators.check(key);
    const view = this.inspector(backend).partitions();
    if (view === null) return indicator.up({ partitions: 1 });
    const details = { partitions: view.partitions, span: view.span };
    if (view.others.length === 0) return indicator.up(details);
    return indicator.down({
      ...details,
      others: view.others.map((other) => other.partitions),
      message: mismatchMessage(view),
    });
  }

  /**
   * Down when the oldest ready run of a queue has waited longer than
   * `maxAgeMs`. A paused queue's runs wait on purpose: it is listed as
   * `paused` and never makes the check down.
   */
  async isQueueAgeUnder<const Key extends string>(
    key: Key,
    maxAgeMs: number,
    { backend, queues, timeoutMs = 1_000 }: QueueAgeCheckOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const inspector = this.inspector(backend);
    const indicator = this.indicators.check(key);
    try {
      const overview = await within(timeoutMs, inspector.overview(1));
      const selected = queues ? overview.filter((queue) => queues.includes(queue.queue)) : overview;
      // A misspelt queue must not pass the check for ever.
      const unknown = (queues ?? []).filter((name) => !overview.some((queue) => queue.queue === name));
      if (unknown.length > 0) {
        return indicator.down({
          message: `No queue ${unknown.join(', ')} on this backend (its queues: ${overview.map((q) => q.queue).join(', ') || 'none'}); check the names given to isQueueAgeUnder.`,
        });
      }
      const ages = Object.fromEntries(selected.map((queue) => [queue.queue, queue.oldestReadyAgeMs ?? 0]));
      const paused = selected.filter((queue) => queue.paused).map((queue) => queue.queue);
      const late = selected
        .filter((queue) => !queue.paused && (queue.oldestReadyAgeMs ?? 0) > maxAgeMs)
        .map((queue) => queue.queue);
      const details: { oldestReadyAgeMs: Record<string, number>; paused?: string[] } = { oldestReadyAgeMs: ages };
      if (paused.length > 0) details.paused = paused;
      if (late.length === 0) return indicator.up(details);
      return indicator.down({
        ...details,
        message: `Queue(s) ${late.join(', ')} have ready runs older than ${maxAgeMs} ms; add workers or find what blocks them.`,
      });
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}

/** `work`, or a rejection once `timeoutMs` passed: a health check must answer while Redis does not. */
async function within<T>(timeoutMs: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
