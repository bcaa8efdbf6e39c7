/**
 * `confirmEnqueues`: an enqueue resolves only once this many replicas of the
 * Redis master that stored its runs acknowledged them (Redis's `WAIT`), so a
 * failover of that master cannot lose a run the enqueue confirmed
 * (docs/scale-out.md, "Failover, stated honestly").
 */
export interface EnqueueConfirmation {
  /** How many replicas of the master must hold the runs (1 to 100). */
  replicas: number;
  /**
   * How long a store waits for them, in ms (1 to 60,000); past it the
   * enqueue throws `UnconfirmedEnqueueError`, its runs stored on the master.
   * @defaultValue `1000`
   */
  timeoutMs?: number;
}

/** An {@link EnqueueConfirmation} with its default applied. */
export type ResolvedEnqueueConfirmation = Readonly<Required<EnqueueConfirmation>>;

const DEFAULT_TIMEOUT_MS = 1_000;
const MAX_REPLICAS = 100;
/** Longest wait: a WAIT holds its connection, and every confirmed store of the process waits behind it. */
const MAX_TIMEOUT_MS = 60_000;
const FIELDS: readonly string[] = ['replicas', 'timeoutMs'];

/**
 * What is wrong with a `confirmEnqueues` value, as a sentence naming the
 * field and the value, or undefined when it is valid: `false`, or
 * `{ replicas, timeoutMs? }` of whole numbers in range.
 */
export function enqueueConfirmationProblem(value: unknown): string | undefined {
  if (value === false) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return (
      'confirmEnqueues must be false (the default) or { replicas, timeoutMs? }, ' +
      'e.g. { replicas: 1, timeoutMs: 1000 }'
    );
  }
  for (const key of Object.keys(value)) {
    if (!FIELDS.includes(key)) {
      return `confirmEnqueues has an unknown field "${key}": its fields are replicas and timeoutMs`;
    }
  }
  const { replicas, timeoutMs } = value as Record<string, unknown>;
  if (!isWhole(replicas, 1, MAX_REPLICAS)) {
    return `confirmEnqueues.replicas must be a whole number from 1 to ${MAX_REPLICAS}, got ${String(replicas)}`;
  }
  if (timeoutMs !== undefined && !isWhole(timeoutMs, 1, MAX_TIMEOUT_MS)) {
    return (
      `confirmEnqueues.timeoutMs must be a whole number of ms from 1 to ${MAX_TIMEOUT_MS}, got ${String(timeoutMs)} ` +
      "(Redis's WAIT 0 would wait forever)"
    );
  }
  return undefined;
}

/** A valid `confirmEnqueues` with its default applied; undefined when it is off. */
export function resolveEnqueueConfirmation(
  value: EnqueueConfirmation | false | undefined,
): ResolvedEnqueueConfirmation | undefined {
  if (!value) return undefined;
  return { replicas: value.replicas, timeoutMs: value.timeoutMs ?? DEFAULT_TIMEOUT_MS };
}

function isWhole(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}
