import { parseFragment } from '../../codec/json-fragment.js';
import type { TaskError } from '../../records/task-result.js';
import type { LeasedRun } from '../task-backend.js';

/**
 * A run leased from Redis. Its attempt history (worker ids, errors) stays in
 * its stored JSON form until someone reads it: a successful first attempt
 * never does.
 */
export class RedisLeasedRun implements LeasedRun {
  private parsedWorkers: string[] | undefined;
  private parsedErrors: TaskError[] | undefined;

  constructor(
    readonly id: string,
    readonly queue: string,
    readonly token: string,
    readonly deadline: number,
    readonly payload: string,
    readonly enqueuedAt: number,
    readonly claimedAt: number,
    readonly attempts: number,
    readonly startedAt: number | null,
    readonly recoveries: number,
    private readonly workersFragment: string,
    private readonly errorsFragment: string,
  ) {}

  get workerIds(): readonly string[] {
    return (this.parsedWorkers ??= parseFragment<string>(this.workersFragment));
  }

  get errors(): readonly TaskError[] {
    return (this.parsedErrors ??= parseFragment<TaskError>(this.errorsFragment));
  }
}
