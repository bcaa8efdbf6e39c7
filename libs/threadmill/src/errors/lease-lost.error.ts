import { ThreadmillError } from './threadmill.error.js';

/**
 * The reason a task's `AbortSignal` is aborted when its worker lost the
 * lease: the run was reaped or claimed again, so this attempt's outcome will
 * be discarded. Stop work and return.
 */
export class LeaseLostError extends ThreadmillError {
  constructor(readonly runId: string) {
    super(`Lost the lease of run ${runId}: it expired and was recovered, so this attempt's outcome will be discarded.`);
  }
}
