import type { TaskError } from '../queue/task-result.js';

const MAX_STACK = 8_192;

/** Anything a task throws, as an Error: a thrown string or object is wrapped, not lost. */
export function asError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  const error = new Error(typeof thrown === 'string' ? thrown : `Non-error thrown: ${String(thrown)}`);
  error.name = 'NonErrorThrown';
  return error;
}

/** The stored record of an attempt's error. Stacks are capped so a runaway trace cannot bloat the run. */
export function toTaskError(error: Error, attempt: number): TaskError {
  const stack = error.stack ?? `${error.name}: ${error.message}`;
  return {
    errorClass: error.constructor?.name && error.constructor.name !== 'Error' ? error.constructor.name : error.name,
    message: error.message,
    stack: stack.length > MAX_STACK ? `${stack.slice(0, MAX_STACK)}\n    … (truncated)` : stack,
    attempt,
  };
}
