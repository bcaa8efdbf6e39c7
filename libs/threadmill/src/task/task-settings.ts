import { InvalidTaskError } from '../errors/invalid-task.error.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import { moduleOptionProblem } from '../options/validate-options.js';
import { resultTtlProblem, taskResultTtls, type ResultTtl, type ResultTtlByOutcome } from '../records/result-ttl.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import { taskLimitProblem, type TaskLimit } from '../limits/task-limit.js';

/** The longest delay a Node timer keeps: a longer one fires at once. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** How a task's runs are enqueued and leased: from `@Task()`, a handler's extras or a contract. */
export interface TaskSettings {
  readonly name: string;
  /** The backend whose module registers it and whose queues hold its runs. */
  readonly backend: string;
  readonly queue: string;
  readonly priority: number;
  readonly retry: RetryPolicy | undefined;
  /** Lease override; undefined means the module's `leaseTtlMs`. */
  readonly leaseTtlMs: number | undefined;
  /**
   * How long its finished runs are kept, per outcome, where it overrides the
   * module's `resultTtlMs`; undefined (or an outcome left out) means the module's.
   */
  readonly resultTtlMs: ResultTtlByOutcome | undefined;
  /** Longest an attempt may run (ms); undefined means no limit. */
  readonly timeoutMs: number | undefined;
  /** Its limit per limit group (`@Task({ limit })`); undefined means none. */
  readonly limit?: TaskLimit;
}

/**
 * The settings a contract fixes, which its producers and its worker share.
 * The retry policy, how long results are kept and how long an attempt may
 * run concern only the worker that runs the task.
 */
export type ContractSettings = Omit<TaskSettings, 'retry' | 'resultTtlMs' | 'timeoutMs' | 'limit'>;

/** The settings as declared, before defaults and checks. */
export interface DeclaredSettings {
  readonly name?: unknown;
  readonly backend?: unknown;
  readonly queue?: unknown;
  readonly priority?: unknown;
  readonly retry?: unknown;
  readonly leaseTtlMs?: unknown;
  readonly resultTtlMs?: unknown;
  readonly timeoutMs?: unknown;
  readonly limit?: unknown;
}

/**
 * Applies the defaults to declared task settings and checks them.
 * @param site where they are declared, for the error (`EmailService#send`)
 * @param declaration what declares them, for the error (`@Task()`)
 * @param queues the module's queues, or undefined where they are not known (a contract)
 * @throws InvalidTaskError naming the site and the bad setting
 */
export function resolveTaskSettings(
  declared: DeclaredSettings,
  site: string,
  declaration: string,
  queues: readonly string[] | undefined,
): TaskSettings {
  const fail = (problem: string) => new InvalidTaskError(site, problem, declaration);
  const {
    name,
    backend = DEFAULT_BACKEND,
    queue = 'default',
    priority = 0,
    retry,
    leaseTtlMs,
    resultTtlMs,
    timeoutMs,
    limit,
  } = declared;
  if (typeof name !== 'string' || name.trim() === '' || name.length > 200) {
    throw fail(`name must be a non-empty string of at most 200 characters, got ${JSON.stringify(name)}.`);
  }
  if (typeof backend !== 'string' || !NAME_PATTERN.test(backend)) {
    throw fail(`backend must be 1-64 characters of letters, digits, "_", "." or "-", got ${JSON.stringify(backend)}.`);
  }
  if (typeof queue !== 'string' || !NAME_PATTERN.test(queue)) {
    throw fail(`queue must be 1-64 characters of letters, digits, "_", "." or "-", got ${JSON.stringify(queue)}.`);
  }
  if (queues && !queues.includes(queue)) {
    throw fail(
      `queue "${queue}" is not one of the module's queues (${queues.join(', ')}). ` +
        `Add it to ThreadmillModule.forRoot({ ${backend === DEFAULT_BACKEND ? '' : `name: '${backend}', `}queues: [...] }).`,
    );
  }
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < -100 || priority > 100) {
    throw fail(`priority must be an integer from -100 to 100, got ${JSON.stringify(priority)}.`);
  }
  // The module's rule: a task's lease is one the module could have set for all.
  const leaseProblem = leaseTtlMs === undefined ? undefined : moduleOptionProblem('leaseTtlMs', leaseTtlMs);
  if (leaseProblem !== undefined) throw fail(`${leaseProblem} (ms), got ${JSON.stringify(leaseTtlMs)}.`);
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)
  ) {
    throw fail(
      `timeoutMs must be an integer from 1 to ${MAX_TIMEOUT_MS} ms (about 24.8 days), got ${JSON.stringify(timeoutMs)}; ` +
        'leave it out for no limit.',
    );
  }
  const ttlProblem = resultTtlMs === undefined ? undefined : resultTtlProblem(resultTtlMs);
  if (ttlProblem !== undefined) throw fail(`${ttlProblem}, got ${JSON.stringify(resultTtlMs)}.`);
  if (
    retry !== undefined &&
    typeof retry !== 'function' &&
    typeof (retry as { delayFor?: unknown } | null)?.delayFor !== 'function'
  ) {
    throw fail(
      'retry must be a function (context) => delayMs | null or an object with delayFor(), such as new ExponentialBackoff().',
    );
  }
  if (limit !== undefined) {
    const problem = taskLimitProblem(limit, true);
    if (problem !== undefined) throw fail(`${problem}. Pass limit: { rate: { max, perMs }, concurrency, key }.`);
    // A limit group is named `<task>\n<key>` (lua/includes/limit-groups.lua).
    if (name.includes('\n')) throw fail('the name of a task with a limit must not hold a newline.');
  }
  return {
    name,
    backend,
    queue,
    priority,
    retry: retry as RetryPolicy | undefined,
    leaseTtlMs: leaseTtlMs as number | undefined,
    resultTtlMs: taskResultTtls(resultTtlMs as ResultTtl | undefined),
    timeoutMs,
    ...(limit !== undefined ? { limit: limit as TaskLimit } : {}),
  };
}
