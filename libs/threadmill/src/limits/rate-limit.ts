import type { StoredRateLimit } from '../records/backend-records.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';

/**
 * A queue's rate limit: at most `max` of its runs start in any window of
 * `perMs`, across every worker of every pool (see `docs/rate-limits.md`).
 */
export interface RateLimit {
  /** Most runs started in any window of `perMs`. */
  readonly max: number;
  /** The window, in ms. */
  readonly perMs: number;
  /**
   * How long after its claim a run of the queue may still start; later, its
   * worker hands it back unstarted (uncharged). Claims count runs over
   * `perMs + startSlackMs`, so the queue's sustained rate is
   * `max / (perMs + startSlackMs)`.
   * @defaultValue a tenth of `perMs` (at least 1 ms)
   */
  readonly startSlackMs?: number;
}

/** The slack a limit gets when it names none. */
export function defaultStartSlackMs(perMs: number): number {
  return Math.max(1, Math.ceil(perMs / 10));
}

/** What is wrong with a rate limit of `queue`, or undefined when nothing is. */
export function rateLimitProblem(queue: string, limit: unknown): string | undefined {
  if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
    return `the rate limit of queue "${queue}" must be { max, perMs }, got ${String(limit)}`;
  }
  const problems = rateFieldProblems(limit as Record<string, unknown>);
  if (problems.length === 0) return undefined;
  return (
    `the rate limit of queue "${queue}" is invalid: ${problems.join('; ')}; ` +
    'pass { max: <runs>, perMs: <window in ms> }, e.g. { max: 50, perMs: 1000 }'
  );
}

/** What is wrong with each field of a rate limit (a queue's or a task's), none when nothing is. */
export function rateFieldProblems(limit: Readonly<Record<string, unknown>>): string[] {
  const { max, perMs, startSlackMs, ...rest } = limit;
  const problems: string[] = [];
  for (const [name, value] of [
    ['max', max],
    ['perMs', perMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || (value as number) < 1) {
      problems.push(`${name} must be a positive integer, got ${String(value)}`);
    }
  }
  if (startSlackMs !== undefined && (!Number.isSafeInteger(startSlackMs) || (startSlackMs as number) < 0)) {
    problems.push(`startSlackMs must be an integer of 0 or more, got ${String(startSlackMs)}`);
  }
  for (const name of Object.keys(rest)) problems.push(`${name} is not a rate limit option`);
  return problems;
}

/**
 * A rate limit checked and completed for storage, or a typed error naming
 * the queue and what is wrong.
 */
export function storedRateLimit(queue: string, limit: RateLimit): StoredRateLimit {
  const problem = rateLimitProblem(queue, limit);
  if (problem !== undefined) throw new InvalidInspectionError(`${problem[0]!.toUpperCase()}${problem.slice(1)}.`);
  const startSlackMs = limit.startSlackMs ?? defaultStartSlackMs(limit.perMs);
  return { max: limit.max, perMs: limit.perMs, startSlackMs };
}
