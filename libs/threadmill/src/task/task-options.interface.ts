import type { TaskLimit } from '../limits/task-limit.js';
import type { ResultTtl } from '../records/result-ttl.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { TaskScheduleOptions } from '../records/schedule-options.interface.js';

/** Options of `@Task()`. */
export interface TaskOptions {
  /**
   * Name producers enqueue the task by. Must be unique in the application.
   * @defaultValue `'ClassName.method'`
   */
  name?: string;
  /**
   * The backend the task belongs to: the `name` of one of the application's
   * `ThreadmillModule`s. That module registers it, checks its queue against
   * its own `queues`, stores its runs and its server runs them; its
   * `TaskQueue` (`@InjectTaskQueue(backend)`) enqueues it.
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Queue its runs go to; must be one of the module's `queues`.
   * @defaultValue `'default'`
   */
  queue?: string;
  /**
   * -100..100; among ready runs of a queue, higher runs first (FIFO within a priority).
   * @defaultValue `0`
   */
  priority?: number;
  /**
   * What to do after a failed attempt: an `ExponentialBackoff`, or a function
   * returning the delay in ms before the next attempt, or null to stop.
   * @defaultValue none: a failed run finishes FAILED
   */
  retry?: RetryPolicy;
  /**
   * Lease length for this task's runs, when it differs from the module's `leaseTtlMs`.
   * @defaultValue the module's `leaseTtlMs`
   */
  leaseTtlMs?: number;
  /**
   * Longest an attempt may run, in ms. When an attempt runs longer, its
   * `AbortSignal` aborts with a `TaskTimeoutError` and the attempt fails with
   * that error into the retry policy. Code that ignores the signal is not
   * stopped: it keeps its slot until it returns, and what it returns is
   * discarded (docs/tasks.md, "Timeouts").
   * @defaultValue none: an attempt runs as long as it takes
   */
  timeoutMs?: number;
  /**
   * How long this task's finished runs are kept for `getResult`, when it
   * differs from the module's `resultTtlMs`: one number for both outcomes, or
   * one per outcome (`{ failed: 7 * 86_400_000 }` keeps its failures a week
   * and its successes as the module says). `0` deletes such runs at
   * acknowledgement. The worker that runs the task applies it.
   * @defaultValue the module's `resultTtlMs`
   */
  resultTtlMs?: ResultTtl;
  /**
   * Runs the task on a schedule, declared by the code: a cron expression
   * (`{ cron: '0 3 * * *', tz: 'Europe/Berlin' }`) or an interval
   * (`{ everyMs: 60_000 }`), with the runs' `args`. The workers fire one run
   * per slot; a schedule removed from the code stops when the new version's
   * workers boot (see `docs/schedules.md`).
   * @defaultValue none
   */
  schedule?: TaskScheduleOptions;
  /**
   * Holds back its runs across every worker of every pool: a rate
   * (`{ max, perMs }`), a concurrency, or both, for the task as a whole or,
   * with `key: (args) => string`, per key computed from a run's arguments
   * (a customer id). Runs held back stay READY, are not charged an attempt,
   * and hold back no other key or task of the queue. Written to Redis when
   * an application that registers the task boots; changed at run time with
   * `TaskInspector.setTaskLimit` (see `docs/rate-limits.md`).
   * @defaultValue none
   */
  limit?: TaskLimit;
}
