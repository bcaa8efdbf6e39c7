import type { TaskResult } from '../queue/task-result.js';

/**
 * What a running task knows about its run. Declare a last parameter of this
 * type on a `@Task()` method to receive it.
 */
export class TaskContext {
  constructor(
    /** The run being executed, as of this attempt's claim. */
    readonly result: TaskResult,
    /**
     * Aborted when the attempt must stop early: its lease was lost (another
     * attempt may already run) or the worker is stopping hard. Pass it to
     * fetch, timers and child processes.
     */
    readonly signal: AbortSignal,
  ) {}

  /** The run id. Use it as an idempotency key: a run may execute more than once. */
  get id(): string {
    return this.result.id;
  }

  /** This attempt's number, 1 for the first. */
  get attempt(): number {
    return this.result.attempts;
  }
}
