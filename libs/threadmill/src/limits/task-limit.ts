import type { StoredTaskLimit } from '../records/backend-records.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';
import { describeValue } from '../codec/describe-value.js';
import { defaultStartSlackMs, rateFieldProblems, type RateLimit } from './rate-limit.js';

/** The longest limit key a `key` function may return, in characters. */
export const MAX_LIMIT_KEY_LENGTH = 200;

/**
 * A task's limit (`@Task({ limit })`): a rate, a concurrency, or both, held
 * per limit group across every worker of every pool. A group is the task
 * alone, or, with `key`, the task and the key computed from a run's
 * arguments (a customer id): each key then has the limit to itself. Runs held
 * back stay READY, uncharged, and hold back neither other groups nor other
 * tasks of the queue (see `docs/rate-limits.md`).
 */
export interface TaskLimit {
  /**
   * At most `max` runs of a group start in any window of `perMs`; each must
   * start within `startSlackMs` of its claim (as for a queue's rate limit).
   * @defaultValue none
   */
  readonly rate?: RateLimit;
  /**
   * At most this many runs of a group leased (running or held by a worker)
   * at once; a killed worker's runs count until their leases expire and are
   * reaped.
   * @defaultValue none
   */
  readonly concurrency?: number;
  /**
   * The run's key, from its arguments (as passed to `enqueue`): a non-empty
   * string of at most {@link MAX_LIMIT_KEY_LENGTH} characters. Computed at
   * enqueue, by the producer. Without it, the limit holds for the task as a
   * whole.
   * @defaultValue none: one group per task (and queue)
   */
  // A method, so that a key of a typed tuple (`([id]: [string]) => id`) is accepted.
  key?(args: readonly unknown[]): string;
}

/** What `setTaskLimit` takes: a task limit as stored, without its key (the code's). */
export type TaskLimitSettings = Pick<TaskLimit, 'rate' | 'concurrency'>;

/** What is wrong with task limit `limit`, or undefined; `withKey`: whether a `key` may be given. */
export function taskLimitProblem(limit: unknown, withKey: boolean): string | undefined {
  if (typeof limit !== 'object' || limit === null || Array.isArray(limit)) {
    return `limit must be { rate?, concurrency?${withKey ? ', key?' : ''} }, got ${describeValue(limit)}`;
  }
  const { rate, concurrency, key, ...rest } = limit as Record<string, unknown>;
  const problems: string[] = [];
  if (rate === undefined && concurrency === undefined) problems.push('give a rate, a concurrency or both');
  if (typeof rate === 'object' && rate !== null && !Array.isArray(rate)) {
    for (const problem of rateFieldProblems(rate as Record<string, unknown>)) problems.push(`rate.${problem}`);
  } else if (rate !== undefined) {
    problems.push(`rate must be { max, perMs, startSlackMs? }, got ${describeValue(rate)}`);
  }
  if (concurrency !== undefined && (!Number.isSafeInteger(concurrency) || (concurrency as number) < 1)) {
    problems.push(`concurrency must be a positive integer, got ${describeValue(concurrency)}`);
  }
  if (key !== undefined && (!withKey || typeof key !== 'function')) {
    problems.push(
      withKey ? `key must be a function (args) => string, got ${describeValue(key)}` : 'key is set in code',
    );
  }
  for (const name of Object.keys(rest)) problems.push(`${name} is not a limit option`);
  return problems.length === 0 ? undefined : problems.join('; ');
}

/** A task limit as stored: the rate's slack defaulted, the key left out. */
export function storedTaskLimit(limit: TaskLimitSettings): StoredTaskLimit {
  const { rate, concurrency } = limit;
  return {
    ...(rate
      ? {
          rate: {
            max: rate.max,
            perMs: rate.perMs,
            startSlackMs: rate.startSlackMs ?? defaultStartSlackMs(rate.perMs),
          },
        }
      : {}),
    ...(concurrency !== undefined ? { concurrency } : {}),
  };
}

/**
 * A task limit a `TaskInspector` call gives, checked and completed for
 * storage, or a typed error naming the task and what is wrong.
 */
export function checkedTaskLimit(task: string, limit: TaskLimitSettings): StoredTaskLimit {
  const problem = taskLimitProblem(limit, false);
  if (problem !== undefined) {
    throw new InvalidInspectionError(
      `The limit of task "${task}" is invalid: ${problem}. ` +
        'Pass { rate: { max, perMs }, concurrency }, either or both, or null to remove it.',
    );
  }
  return storedTaskLimit(limit);
}

/**
 * The limit group of a run of task `task` (limit `limit`) with `args`: the
 * task, or `<task>\n<key>` with the key its `key` function returns.
 * @param label how errors name the item (`itemLabel`)
 * @throws InvalidEnqueueError when the key function throws or returns anything but a string of 1-200 characters
 */
export function limitGroup(task: string, limit: TaskLimit, args: readonly unknown[], label: string): string {
  if (limit.key === undefined) return task;
  let key: unknown;
  try {
    key = limit.key(args);
  } catch (error) {
    throw new InvalidEnqueueError(
      label,
      `its limit key function threw: ${(error as Error)?.message ?? String(error)}.`,
    );
  }
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_LIMIT_KEY_LENGTH) {
    throw new InvalidEnqueueError(
      label,
      `its limit key must be a string of 1-${MAX_LIMIT_KEY_LENGTH} characters, got ${describeValue(key)}: ` +
        'make @Task({ limit: { key } }) return one for every run (a customer id, a tenant).',
    );
  }
  return `${task}\n${key}`;
}

/** The task of limit group `group` (its name up to the first newline; task names never hold one). */
export function groupTask(group: string): string {
  const end = group.indexOf('\n');
  return end < 0 ? group : group.slice(0, end);
}
