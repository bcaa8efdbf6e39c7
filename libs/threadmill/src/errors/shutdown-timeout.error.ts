import { ThreadmillError } from './threadmill.error.js';

/**
 * The reason a task's `AbortSignal` is aborted when its worker stops hard (the
 * shutdown timeout passed, or a second signal came): the attempt is
 * abandoned, and the reaper hands the run out again once its lease expires.
 * Stop work and return.
 */
export class ShutdownTimeoutError extends ThreadmillError {
  constructor() {
    super('The worker is stopping hard (shutdown timeout or second signal); abandon the attempt.');
  }
}
