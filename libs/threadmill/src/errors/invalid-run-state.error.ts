import { ThreadmillError } from './threadmill.error.js';

/**
 * An inspector action does not apply to the run in the state it is in (a
 * running run cannot be dequeued, a successful one cannot be requeued);
 * nothing was changed.
 */
export class InvalidRunStateError extends ThreadmillError {
  constructor(
    readonly id: string,
    readonly action: 'requeue' | 'dequeue' | 'cancel',
    readonly status: string,
    allowed: string,
  ) {
    const done = action === 'cancel' ? 'cancelled' : `${action}d`;
    super(`Cannot ${action} run ${id}: it is ${status}; only ${allowed} runs can be ${done}. Nothing was changed.`);
  }
}
