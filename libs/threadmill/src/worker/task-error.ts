import { inspect } from 'node:util';
import type { TaskError } from '../records/task-result.js';

const MAX_STACK = 8_192;
const MAX_DETAIL = 2_048;

/**
 * Anything a task throws, as an Error: a thrown string or object is wrapped,
 * not lost. An object with a string `message` (what Nest's RPC exception
 * filters emit: `{ status: 'error', message }`) keeps that message.
 */
export function asError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  const message =
    typeof thrown === 'string'
      ? thrown
      : typeof (thrown as { message?: unknown } | null)?.message === 'string'
        ? (thrown as { message: string }).message
        : `Non-error thrown: ${inspect(thrown, { depth: 2, breakLength: Infinity, maxStringLength: 200 })}`;
  const error = new Error(message);
  error.name = 'NonErrorThrown';
  return error;
}

/** What a Nest HTTP exception's response carries as its message (`ValidationPipe`: the list of failed constraints). */
function responseMessage(error: Error): unknown {
  const getResponse = (error as { getResponse?: unknown }).getResponse;
  if (typeof getResponse !== 'function') return undefined;
  return (getResponse.call(error) as { message?: unknown } | null)?.message;
}

/**
 * The message of an error with what its response adds: Nest's HTTP
 * exceptions carry the reasons in their response (`ValidationPipe` lists
 * each failed constraint there, under a message of "Bad Request").
 */
function messageOf(error: Error, detail: unknown): string {
  const text = Array.isArray(detail) ? detail.join('; ') : typeof detail === 'string' ? detail : '';
  if (text === '' || text === error.message) return error.message;
  return `${error.message}: ${text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text}`;
}

/**
 * The reasons a response lists, one by one, within the message's budget
 * (whole reasons; a first one past it is cut): kept apart so that whoever
 * answers the sender (`ThreadmillExceptionFilter`'s 422) need not split the
 * message, whose reasons may hold the separator.
 */
function reasonsOf(detail: unknown): string[] | undefined {
  if (!Array.isArray(detail)) return undefined;
  const reasons: string[] = [];
  let length = 0;
  for (const reason of detail) {
    if (typeof reason !== 'string') continue;
    if (length + reason.length > MAX_DETAIL) {
      if (reasons.length === 0) reasons.push(`${reason.slice(0, MAX_DETAIL)}…`);
      break;
    }
    reasons.push(reason);
    length += reason.length;
  }
  return reasons.length > 0 ? reasons : undefined;
}

/** The stored record of an attempt's error. Stacks are capped so a runaway trace cannot bloat the run. */
export function toTaskError(error: Error, attempt: number): TaskError {
  const stack = error.stack ?? `${error.name}: ${error.message}`;
  const detail = responseMessage(error);
  const reasons = reasonsOf(detail);
  return {
    errorClass: error.constructor?.name && error.constructor.name !== 'Error' ? error.constructor.name : error.name,
    message: messageOf(error, detail),
    stack: stack.length > MAX_STACK ? `${stack.slice(0, MAX_STACK)}\n    … (truncated)` : stack,
    attempt,
    ...(reasons ? { reasons } : {}),
  };
}
