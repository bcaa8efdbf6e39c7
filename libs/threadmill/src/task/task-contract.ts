import { InvalidTaskError } from '../errors/invalid-task.error.js';
import { checkOptionKeys, keysOf } from './option-keys.js';
import { resolveTaskSettings, type ContractSettings } from './task-settings.js';

/** What a contract fixes about its task, besides its name. */
export interface TaskContractOptions {
  /** The backend (a `ThreadmillModule`'s `name`) whose queues hold its runs. @defaultValue `'default'` */
  backend?: string;
  /** @defaultValue `'default'` */
  queue?: string;
  /** -100..100. @defaultValue `0` */
  priority?: number;
  /** Lease length of its runs, when it differs from the module's `leaseTtlMs`. */
  leaseTtlMs?: number;
}

/** What `defineTask()` takes: every option of {@link TaskContractOptions}. */
const CONTRACT_OPTION_KEYS = keysOf<TaskContractOptions>()(['backend', 'queue', 'priority', 'leaseTtlMs']);

/** The options of `@Task()` a contract does not take, with where they go. */
const NOT_FOR_CONTRACTS: Readonly<Record<string, string>> = {
  name: "the contract's name is defineTask()'s first argument",
  retry: 'it concerns only the worker: give it where the worker binds the task, @Task(contract, { retry })',
  resultTtlMs: 'it concerns only the worker: give it where the worker binds the task, @Task(contract, { resultTtlMs })',
  timeoutMs: 'it concerns only the worker: give it where the worker binds the task, @Task(contract, { timeoutMs })',
  limit: 'it concerns only the worker: give it where the worker binds the task, @Task(contract, { limit })',
};

/**
 * A task's name, queue and signature, shared by its producers and its worker
 * through a library, so that a producer enqueues it typed without the
 * worker's providers in its container. Made by {@link defineTask}.
 *
 * @typeParam A the arguments producers pass (a tuple)
 * @typeParam R what the task returns
 */
export class TaskContract<A extends readonly unknown[] = unknown[], R = unknown> {
  /** Carries the argument and return types; never set at runtime. */
  declare readonly types?: { readonly args: A; readonly returns: R };

  /** @internal Use {@link defineTask}. */
  constructor(readonly settings: ContractSettings) {}

  get name(): string {
    return this.settings.name;
  }
}

/** Every contract defined in this process, by name: the worker checks its tasks against them. */
const contracts = new Map<string, TaskContract<never, unknown>>();

/**
 * Defines a task contract. A producer enqueues it with
 * `tasks.enqueue(SendWelcome, [id, email])` (or `client.emit(SendWelcome, [id, email])`);
 * the worker binds its method to it with `@Task(SendWelcome)`, and any task
 * or handler of the worker named like a contract must agree with it, or the
 * worker's boot fails.
 *
 * @example
 * ```ts
 * export const SendWelcome = defineTask<[userId: number, email: string], void>('EmailService.sendWelcome', {
 *   queue: 'emails',
 * });
 * ```
 * @throws InvalidTaskError for a bad name or option, or a second contract of the same name that disagrees
 */
export function defineTask<A extends readonly unknown[], R = void>(
  name: string,
  options: TaskContractOptions = {},
): TaskContract<A, R> {
  const site = `contract ${JSON.stringify(name)}`;
  checkOptionKeys(options, { keys: CONTRACT_OPTION_KEYS, elsewhere: NOT_FOR_CONTRACTS }, site, 'defineTask()');
  const {
    retry: _none,
    resultTtlMs: _worker,
    ...settings
  } = resolveTaskSettings({ ...options, name }, site, 'defineTask()', undefined);
  const existing = contracts.get(name);
  if (existing) {
    const difference = contractDifference(existing.settings, settings);
    if (difference) {
      throw new InvalidTaskError(
        site,
        `it is defined twice, and the definitions disagree: ${difference}. Define each contract once, in a shared library.`,
        'defineTask()',
      );
    }
    return existing as unknown as TaskContract<A, R>;
  }
  const contract = new TaskContract<A, R>(settings);
  contracts.set(name, contract as unknown as TaskContract<never, unknown>);
  return contract;
}

/** Every contract defined in this process. */
export function definedContracts(): TaskContract[] {
  return [...contracts.values()] as TaskContract[];
}

/** The contract named `name` defined in this process, if any. */
export function findContract(name: string): TaskContract | undefined {
  return contracts.get(name) as TaskContract | undefined;
}

const lease = (ms: number | undefined) => (ms === undefined ? "the module's" : String(ms));

/**
 * How a task's settings disagree with its contract's (`queue "a" vs "b"`),
 * or undefined when they agree. Producers store the contract's queue,
 * priority and lease with each run on the contract's backend, so all four must match; the name
 * always does (tasks bind by name).
 */
export function contractDifference(contract: ContractSettings, task: ContractSettings): string | undefined {
  const differences: string[] = [];
  if (contract.backend !== task.backend) differences.push(`backend "${contract.backend}" vs "${task.backend}"`);
  if (contract.queue !== task.queue) differences.push(`queue "${contract.queue}" vs "${task.queue}"`);
  if (contract.priority !== task.priority) differences.push(`priority ${contract.priority} vs ${task.priority}`);
  if (contract.leaseTtlMs !== task.leaseTtlMs) {
    differences.push(`leaseTtlMs ${lease(contract.leaseTtlMs)} vs ${lease(task.leaseTtlMs)}`);
  }
  return differences.length > 0 ? differences.join(', ') : undefined;
}
