import { ThreadmillError } from './threadmill.error.js';

/**
 * A schedule is invalid (bad cron or time zone, both or neither of `cron`
 * and `everyMs`, an interval too short, bounds out of order, an unknown
 * task): nothing is stored. Thrown by `TaskScheduler.upsert`, and at boot for
 * `@Task({ schedule })`.
 */
export class InvalidScheduleError extends ThreadmillError {
  constructor(
    /** The schedule's id. */
    readonly scheduleId: string,
    readonly problem: string,
  ) {
    super(`Invalid schedule "${scheduleId}": ${problem}`);
  }
}
