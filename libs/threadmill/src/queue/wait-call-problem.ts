import { InvalidWaitError } from '../errors/invalid-wait.error.js';
import { describeValue } from '../codec/describe-value.js';
import type { WaitOptions } from './wait-options.interface.js';

/** The options `waitFor` knows. */
const WAIT_OPTIONS: readonly string[] = ['timeoutMs', 'signal', 'onProgress', 'onLog'];
/** The longest `waitFor` timeout a timer can hold (2^31 - 1 ms, about 24.8 days). */
const MAX_WAIT_MS = 2_147_483_647;

/** What is wrong with a `waitFor(id, options)` call, as the error it throws; undefined when nothing is. */
export function waitCallProblem(id: string, options: WaitOptions | undefined): InvalidWaitError | undefined {
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) {
    return new InvalidWaitError(describeValue(id), 'its id must be a string of 1-200 characters.');
  }
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    return new InvalidWaitError(id, 'options must be an object { timeoutMs?, signal?, onProgress?, onLog? }.');
  }
  for (const key in options) {
    if (!WAIT_OPTIONS.includes(key)) {
      return new InvalidWaitError(id, `unknown option "${key}" (known: ${WAIT_OPTIONS.join(', ')}).`);
    }
  }
  for (const key of ['onProgress', 'onLog'] as const) {
    const listener = options?.[key];
    if (listener !== undefined && typeof listener !== 'function') {
      return new InvalidWaitError(id, `${key} must be a function, got ${describeValue(listener)}.`);
    }
  }
  const signal = options?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return new InvalidWaitError(id, `signal must be an AbortSignal, got ${describeValue(signal)}.`);
  }
  const timeoutMs = options?.timeoutMs;
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs >= 1 && timeoutMs <= MAX_WAIT_MS)) {
    return new InvalidWaitError(
      id,
      `timeoutMs must be an integer from 1 to ${MAX_WAIT_MS}, got ${describeValue(timeoutMs)}.`,
    );
  }
  return undefined;
}
