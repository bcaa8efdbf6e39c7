import { ThreadmillError } from './threadmill.error.js';

/**
 * Why an attempt failed when it ran longer than its task's `timeoutMs`: it is
 * the reason of the attempt's `AbortSignal` and the error the attempt fails
 * with, so the task's retry policy decides what follows. The attempt's code is
 * not stopped (JavaScript cannot stop a function): code that ignores the
 * signal goes on, holding its slot, and what it returns or throws later is
 * discarded.
 */
export class TaskTimeoutError extends ThreadmillError {
  constructor(
    readonly runId: string,
    readonly task: string,
    readonly timeoutMs: number,
  ) {
    super(
      `Attempt of run ${runId} (${task}) timed out after ${timeoutMs} ms (@Task({ timeoutMs })). ` +
        'Its signal is aborted; what it returns from now on is discarded.',
    );
  }
}
