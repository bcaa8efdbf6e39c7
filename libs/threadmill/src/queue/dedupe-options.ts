import type { RunDedupe } from '../backend/task-backend.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { describeValue } from '../codec/describe-value.js';
import { MAX_DEFERRAL_MS } from './enqueue-item.js';
import type { DedupeOptions, EnqueueOptions } from './enqueue-options.interface.js';

/** The fields a `dedupe` option may hold. */
const DEDUPE_KEYS = new Set(['key', 'mode', 'ttlMs', 'maxWaitMs', 'releaseOn']);

/** Longest deduplication key, in characters. */
const MAX_KEY_LENGTH = 200;

/**
 * Checks an enqueue's `dedupe` option and returns the run's deduplication
 * with its defaults, or undefined when the enqueue has none. Nothing is
 * written: a bad option throws `InvalidEnqueueError` naming the field and the fix.
 */
export function runDedupe(options: EnqueueOptions, label: string): RunDedupe | undefined {
  const dedupe: unknown = options.dedupe;
  if (dedupe === undefined) return undefined;
  const fail = (problem: string): never => {
    throw new InvalidEnqueueError(label, `dedupe ${problem}`);
  };
  if (dedupe === null || typeof dedupe !== 'object' || Array.isArray(dedupe)) {
    fail(`must be an object { key, mode?, ttlMs?, maxWaitMs?, releaseOn? }, got ${describeValue(dedupe)}.`);
  }
  for (const field in dedupe as object) {
    if (!DEDUPE_KEYS.has(field))
      fail(`has an unknown field "${field}"; its fields are ${[...DEDUPE_KEYS].join(', ')}.`);
  }
  const { key, mode = 'drop', ttlMs, maxWaitMs, releaseOn } = dedupe as DedupeOptions;
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    fail(`key must be a string of 1-${MAX_KEY_LENGTH} characters, got ${describeValue(key)}.`);
  }
  if (mode !== 'drop' && mode !== 'debounce') fail(`mode must be 'drop' or 'debounce', got ${describeValue(mode)}.`);
  const duration = (name: string, value: unknown, least: number): number => {
    if (!Number.isInteger(value) || (value as number) < least || (value as number) > MAX_DEFERRAL_MS) {
      fail(`${name} must be an integer from ${least} to ${MAX_DEFERRAL_MS} (ms), got ${describeValue(value)}.`);
    }
    return value as number;
  };
  if (options.id !== undefined) {
    fail('cannot be combined with id: a caller-chosen id already makes the enqueue idempotent. Give one of them.');
  }
  if (options.waitable !== undefined && options.waitable !== false) {
    fail("cannot be combined with waitable (the run may be another enqueue's): wait with waitFor(result.id).");
  }
  if (mode === 'drop') {
    if (maxWaitMs !== undefined) fail("maxWaitMs applies to mode 'debounce' only; drop it or set mode 'debounce'.");
    if (releaseOn !== undefined && releaseOn !== 'start' && releaseOn !== 'finish') {
      fail(`releaseOn must be 'start' or 'finish', got ${describeValue(releaseOn)}.`);
    }
    return {
      key,
      mode,
      ttlMs: ttlMs === undefined ? 0 : duration('ttlMs', ttlMs, 0),
      maxWaitMs: 0,
      releaseOn: releaseOn ?? 'start',
    };
  }
  if (ttlMs === undefined)
    fail("with mode 'debounce' needs ttlMs, the quiet period each enqueue pushes the run back by.");
  const quiet = duration('ttlMs', ttlMs, 1);
  const cap = maxWaitMs === undefined ? 0 : duration('maxWaitMs', maxWaitMs, 1);
  if (maxWaitMs !== undefined && cap < quiet) {
    fail(`maxWaitMs (${cap}) must be at least ttlMs (${quiet}): the first enqueue already defers the run by ttlMs.`);
  }
  if (releaseOn !== undefined && releaseOn !== 'start') {
    fail(
      "releaseOn must be 'start' (or left out) with mode 'debounce': a debounced run takes no more arguments once it starts.",
    );
  }
  if (options.runAfter !== undefined || options.delayMs !== undefined) {
    fail(
      "with mode 'debounce' sets the run's due time itself (ttlMs after the latest enqueue): drop runAfter and delayMs.",
    );
  }
  return { key, mode, ttlMs: quiet, maxWaitMs: cap, releaseOn: 'start' };
}
