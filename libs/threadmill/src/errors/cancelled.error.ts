import { ThreadmillError } from './threadmill.error.js';

/**
 * The reason a task's `AbortSignal` is aborted when its run was cancelled
 * (`TaskQueue.cancel`, from any process): the run is CANCELLED already, is
 * not retried, and whatever this attempt returns or throws is discarded.
 * Stop work and return.
 */
export class CancelledError extends ThreadmillError {
  constructor(readonly runId: string) {
    super(`Run ${runId} was cancelled: it ended CANCELLED, and this attempt's outcome will be discarded.`);
  }
}
