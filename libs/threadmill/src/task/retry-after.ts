import { ThreadmillError } from '../errors/threadmill.error.js';

/** The most a run may be put back for by `context.retryAfter` (a day). */
const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * Thrown by `context.retryAfter(ms)` to end the attempt: the worker puts the
 * run back for `delayMs` without charging the attempt or asking the retry
 * policy. Not a failure; a task that catches it must rethrow it.
 */
export class RetryAfter extends ThreadmillError {
  constructor(
    readonly runId: string,
    readonly delayMs: number,
  ) {
    super(`Run ${runId} asked to be retried after ${delayMs} ms (context.retryAfter): this attempt is not charged.`);
  }

  /** A checked delay, or a typed error naming the run and what to pass. */
  static of(runId: string, delayMs: number): RetryAfter {
    if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_RETRY_AFTER_MS) {
      throw new InvalidRetryAfterError(runId, delayMs);
    }
    return new RetryAfter(runId, Math.round(delayMs));
  }
}

/** `context.retryAfter` was given a delay that is not a number of ms from 0 to a day. */
export class InvalidRetryAfterError extends ThreadmillError {
  constructor(
    readonly runId: string,
    readonly delayMs: unknown,
  ) {
    super(
      `context.retryAfter of run ${runId} needs a delay in ms from 0 to ${MAX_RETRY_AFTER_MS} (a day), ` +
        `got ${String(delayMs)}: pass how long the run should wait, e.g. the Retry-After header of a 429 in ms.`,
    );
  }
}
