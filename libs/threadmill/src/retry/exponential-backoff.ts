import type { RetryContext, RetryPolicyObject } from './retry-policy.js';

/** Options of {@link ExponentialBackoff}. */
export interface ExponentialBackoffOptions {
  /**
   * Delay before the first retry.
   * @defaultValue `1000`
   */
  baseDelayMs?: number;
  /**
   * Longest delay between two attempts.
   * @defaultValue `3600000` (one hour)
   */
  maxDelayMs?: number;
  /**
   * Growth of the delay per attempt.
   * @defaultValue `2`
   */
  factor?: number;
  /**
   * Most retries; the run gets at most `maxRetries + 1` attempts.
   * @defaultValue `5`
   */
  maxRetries?: number;
  /**
   * Error classes worth retrying; any other error finishes the run FAILED.
   * @defaultValue `[Error]` (every error)
   */
  retryOn?: readonly (abstract new (...args: any[]) => Error)[];
  /**
   * Random spread of each delay, 0..1: `0.2` draws the delay from ±20% of its
   * value, so runs that failed together do not retry in lockstep.
   * @defaultValue `0`
   */
  jitter?: number;
}

/**
 * Retry with delays `baseDelayMs * factor^(attempt - 1)`, capped at
 * `maxDelayMs`, for at most `maxRetries` retries of the errors in `retryOn`.
 *
 * @example
 * ```ts
 * @Task({ retry: new ExponentialBackoff({ baseDelayMs: 500, maxRetries: 3 }) })
 * ```
 */
export class ExponentialBackoff implements RetryPolicyObject {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly factor: number;
  readonly maxRetries: number;
  readonly retryOn: readonly (abstract new (...args: any[]) => Error)[];
  readonly jitter: number;

  constructor(options: ExponentialBackoffOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 1_000;
    this.maxDelayMs = options.maxDelayMs ?? 3_600_000;
    this.factor = options.factor ?? 2;
    this.maxRetries = options.maxRetries ?? 5;
    this.retryOn = options.retryOn ?? [Error];
    this.jitter = options.jitter ?? 0;
    const bad = [
      ['baseDelayMs', this.baseDelayMs, this.baseDelayMs >= 0],
      ['maxDelayMs', this.maxDelayMs, this.maxDelayMs >= this.baseDelayMs],
      ['factor', this.factor, this.factor >= 1],
      ['maxRetries', this.maxRetries, Number.isInteger(this.maxRetries) && this.maxRetries >= 0],
      ['jitter', this.jitter, this.jitter >= 0 && this.jitter <= 1],
    ].filter(([, , ok]) => !ok);
    if (bad.length > 0) {
      throw new RangeError(
        `Invalid ExponentialBackoff options: ${bad.map(([name, value]) => `${name}=${value}`).join(', ')}. ` +
          'Expected baseDelayMs >= 0, maxDelayMs >= baseDelayMs, factor >= 1, an integer maxRetries >= 0 and 0 <= jitter <= 1.',
      );
    }
  }

  delayFor({ error, attempt }: RetryContext): number | null {
    if (attempt > this.maxRetries) return null;
    if (!this.retryOn.some((type) => error instanceof type)) return null;
    const delay = Math.min(this.baseDelayMs * this.factor ** (attempt - 1), this.maxDelayMs);
    if (this.jitter === 0) return delay;
    return Math.round(delay * (1 - this.jitter + 2 * this.jitter * Math.random()));
  }
}
