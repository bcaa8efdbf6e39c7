import { ThreadmillError } from './threadmill.error.js';

/**
 * `waitFor(id, { timeoutMs })` gave up: run `id` did not settle in time. The
 * run itself is untouched and still pending (READY, deferred or RUNNING).
 */
export class WaitTimeoutError extends ThreadmillError {
  constructor(
    readonly id: string,
    readonly timeoutMs: number,
  ) {
    super(
      `Run "${id}" did not settle within ${timeoutMs} ms of waitFor; it is still pending and keeps its place. ` +
        'Wait again, read it with getResult(id), or give a longer timeoutMs.',
    );
  }
}
