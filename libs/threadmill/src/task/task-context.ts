import { RetryAfter } from './retry-after.js';
import type { LeasedRun } from '../backend/task-backend.js';
import type { RunPayload } from '../queue/run-payload.js';
import type { TaskResult } from '../queue/task-result.js';
import { taskResultFromLease } from '../queue/task-result.factory.js';

/**
 * What a running task knows about its run. Declare a last parameter of this
 * type on a `@Task()` method to receive it; a Nest handler receives its
 * subclass `ThreadmillContext` through `@Ctx()`.
 *
 * Built for every attempt that takes one, so it holds only what the worker
 * already has: the run record ({@link result}) is assembled on first read.
 */
export class TaskContext {
  private record: TaskResult | undefined;

  /** @internal Built by the worker for each attempt. */
  constructor(
    private readonly run: LeasedRun,
    private readonly payload: RunPayload,
    /**
     * Aborted when the attempt must stop early: its lease was lost (another
     * attempt may already run) or the worker is stopping hard. Pass it to
     * fetch, timers and child processes.
     */
    readonly signal: AbortSignal,
  ) {}

  /**
   * A context for a given run record, for calling a task method in a unit
   * test as a worker would (`signal` aborted plays a lost lease).
   */
  static of(result: TaskResult, signal: AbortSignal = new AbortController().signal): TaskContext {
    // With the record set, the getters read only these fields of the lease and the payload.
    const run: Pick<LeasedRun, 'id' | 'queue' | 'attempts'> = result;
    const payload: Pick<RunPayload, 'task'> = { task: result.taskName };
    const context = new TaskContext(run as LeasedRun, payload as RunPayload, signal);
    context.record = result;
    return context;
  }

  /** The run being executed, as of this attempt's claim. */
  get result(): TaskResult {
    return (this.record ??= taskResultFromLease(this.run, this.payload));
  }

  /**
   * Ends this attempt and puts the run back for `ms` (an HTTP 429's
   * Retry-After, say) without spending a retry: the attempt is not charged
   * (`attempts` stays as it was, so the next attempt has this one's number
   * again), no error is recorded, the retry policy is not asked, and the run
   * waits deferred, then runs again. Throws, so `return context.retryAfter(ms)`
   * or `throw` it on; a task that catches it must rethrow it. A task without a
   * retry policy may use it too. See `docs/rate-limits.md`.
   */
  retryAfter(ms: number): never {
    throw RetryAfter.of(this.run.id, ms);
  }

  /** The run id. Use it as an idempotency key: a run may execute more than once. */
  get id(): string {
    return this.run.id;
  }

  /** This attempt's number, 1 for the first. */
  get attempt(): number {
    return this.run.attempts;
  }

  /** The queue the run was claimed from. */
  get queue(): string {
    return this.run.queue;
  }

  /** The name the run was enqueued under: the task's name, or the handler's pattern. */
  get taskName(): string {
    return this.payload.task;
  }
}
