import type { TaskResult } from '../records/task-result.js';

/** What a retry policy is asked after an attempt failed. */
export interface RetryContext {
  /** The error of the attempt that just failed (an `AcknowledgementTimeoutError` when its lease expired). */
  readonly error: Error;
  /** The attempt (1-based) that just failed. */
  readonly attempt: number;
  /** The run, including the error history up to the previous attempt. */
  readonly result: TaskResult;
}

/**
 * A function policy: return the delay in ms before the next attempt, or
 * `null` to give up and finish the run FAILED.
 */
export type RetryPolicyFunction = (context: RetryContext) => number | null;

/** An object policy such as {@link ExponentialBackoff}. */
export interface RetryPolicyObject {
  delayFor(context: RetryContext): number | null;
}

/** How a task decides whether, and when, a failed run is retried. No policy: never retried. */
export type RetryPolicy = RetryPolicyFunction | RetryPolicyObject;

/**
 * Asks `policy` for the delay before the next attempt; `null` means finish
 * FAILED. A policy that returns something other than a finite non-negative
 * number or null is a bug in the policy: it throws here, so the caller fails
 * the run with that error rather than guessing.
 */
export function retryDelay(policy: RetryPolicy | undefined, context: RetryContext): number | null {
  if (!policy) return null;
  const delay = typeof policy === 'function' ? policy(context) : policy.delayFor(context);
  if (delay === null) return null;
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
    throw new TypeError(
      `Retry policy returned ${String(delay)}; it must return a delay in ms (a finite number >= 0) or null.`,
    );
  }
  return Math.round(delay);
}
