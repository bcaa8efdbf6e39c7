import type { TaskError, TaskResult } from '../records/task-result.js';
import { ThreadmillError } from './threadmill.error.js';

/**
 * A run a sender waited for (`ThreadmillClient.send`) ended without a
 * result: FAILED, QUARANTINED for an operator, or CANCELLED. `result` is the run as it
 * settled; `error` its last attempt's error, if it had one.
 */
export class RunFailedError extends ThreadmillError {
  readonly error: TaskError | undefined;

  constructor(readonly result: TaskResult) {
    const error = result.errors.at(-1);
    const quarantine = result.quarantine;
    super(
      `Run ${result.id} of ${result.taskName} ended ${result.status}` +
        (quarantine ? ` (${quarantine.reason}: ${quarantine.message})` : '') +
        (error ? `: ${error.errorClass}: ${error.message}` : '.'),
    );
    this.error = error;
  }
}
