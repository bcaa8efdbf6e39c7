/**
 * How long a finished run is kept for `getResult`, in ms, per outcome that
 * finishes a run. A quarantined run is not finished: it is kept until an
 * operator requeues or purges it, whatever these say.
 */
export interface ResultTtlByOutcome {
  /** How long a SUCCESSFUL run is kept; `0` deletes it at acknowledgement. */
  successful?: number;
  /** How long a FAILED run is kept; `0` deletes it at acknowledgement. */
  failed?: number;
}

/**
 * `resultTtlMs` of the module and of `@Task()`: one number for both outcomes,
 * or one per outcome (an outcome left out keeps the value it would have had).
 */
export type ResultTtl = number | ResultTtlByOutcome;

/** The outcomes whose runs are kept for a result TTL, then removed. */
export type FinishedOutcome = keyof ResultTtlByOutcome;

/** A result TTL with both outcomes resolved. */
export type ResultTtls = Readonly<Required<ResultTtlByOutcome>>;

/** The module's default: one day for both outcomes. */
export const DEFAULT_RESULT_TTL_MS = 24 * 3600 * 1000;

const OUTCOMES: readonly FinishedOutcome[] = ['successful', 'failed'];

/**
 * What is wrong with a `resultTtlMs` value, as a sentence that names it, or
 * undefined when it is valid: a whole number of ms, 0 or more, or an object
 * of such numbers under `successful` and `failed` only.
 */
export function resultTtlProblem(value: unknown): string | undefined {
  const ttlRule = 'must be a whole number of ms, 0 or more (0: not kept)';
  if (typeof value === 'number') return isTtl(value) ? undefined : `resultTtlMs ${ttlRule}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'resultTtlMs must be a number of ms, or one per outcome: { successful?: ms, failed?: ms }';
  }
  for (const [key, ttl] of Object.entries(value)) {
    if (!(OUTCOMES as readonly string[]).includes(key)) {
      return `resultTtlMs names an unknown outcome "${key}": the outcomes kept for a TTL are "successful" and "failed"`;
    }
    if (ttl !== undefined && !isTtl(ttl)) return `resultTtlMs.${key} ${ttlRule}`;
  }
  return undefined;
}

function isTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A valid `resultTtlMs` as one value per outcome, an outcome left out taking
 * its value from `fallback`.
 */
export function resolveResultTtl(value: ResultTtl, fallback: ResultTtls): ResultTtls {
  if (typeof value === 'number') return { successful: value, failed: value };
  return { successful: value.successful ?? fallback.successful, failed: value.failed ?? fallback.failed };
}

/** The module's `resultTtlMs` (validated) per outcome. */
export function moduleResultTtls(value: ResultTtl | undefined): ResultTtls {
  const fallback = { successful: DEFAULT_RESULT_TTL_MS, failed: DEFAULT_RESULT_TTL_MS };
  return value === undefined ? fallback : resolveResultTtl(value, fallback);
}

/**
 * A task's `resultTtlMs` (validated) as the override it makes per outcome:
 * an outcome it leaves out keeps the module's value (undefined).
 */
export function taskResultTtls(value: ResultTtl | undefined): ResultTtlByOutcome | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number') return { successful: value, failed: value };
  const { successful, failed } = value;
  return successful === undefined && failed === undefined ? undefined : { successful, failed };
}

/**
 * How long a run that ended with `outcome` is kept, when `override` (its
 * task's `resultTtlMs`) says; undefined for the module's value, and for an
 * outcome that does not finish a run (a retry, a quarantine).
 */
export function overriddenTtl(override: ResultTtlByOutcome | undefined, outcome: string): number | undefined {
  if (override === undefined) return undefined;
  return outcome === 'successful' ? override.successful : outcome === 'failed' ? override.failed : undefined;
}
