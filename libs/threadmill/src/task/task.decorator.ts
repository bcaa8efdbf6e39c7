import { SetMetadata } from '@nestjs/common';
import { TASK_METADATA } from '../threadmill.constants.js';
import type { TaskContext } from './task-context.js';
import { TaskContract } from './task-contract.js';
import type { BINDING_OPTION_KEYS } from './task-option-keys.js';
import type { TaskOptions } from './task-options.interface.js';

/**
 * The options of a task bound to a contract: the contract fixes its name,
 * queue, priority and lease; the worker's retry policy, result TTL, attempt timeout and limit are the task's.
 */
export type TaskBindingOptions = Pick<TaskOptions, (typeof BINDING_OPTION_KEYS)[number]>;

/** What `@Task()` stores on a method. */
export interface TaskMetadata extends TaskOptions {
  /** The contract the method binds to, for `@Task(contract)`. */
  readonly contract?: TaskContract;
}

/** A method that implements contract `TaskContract<A, R>`: its arguments, then optionally its context. */
export type ContractMethod<A extends readonly unknown[], R> =
  ((...args: A) => R | PromiseLike<R>) | ((...args: [...A, TaskContext]) => R | PromiseLike<R>);

/**
 * Marks a provider method as a task. Threadmill finds it by reflection at
 * boot; producers enqueue it through `TaskQueue`, workers run it through
 * dependency injection, on the provider instance.
 *
 * The method may be `async`. To receive its {@link TaskContext} (attempt,
 * run record, AbortSignal), declare a last parameter of type `TaskContext`;
 * producers do not pass it.
 *
 * @example
 * ```ts
 * @Injectable()
 * export class EmailService {
 *   @Task({ queue: 'emails', retry: new ExponentialBackoff() })
 *   async send(to: string, body: string, context: TaskContext) { ... }
 * }
 * ```
 */
export function Task(options?: TaskOptions): MethodDecorator;
/**
 * Binds a provider method to a task contract (see `defineTask`): the task
 * takes the contract's name, queue, priority and lease, and the compiler
 * checks the method's parameters and return type against the contract's.
 *
 * @example
 * ```ts
 * @Task(SendWelcome, { retry: new ExponentialBackoff() })
 * async sendWelcome(userId: number, email: string) { ... }
 * ```
 */
export function Task<A extends readonly unknown[], R>(
  contract: TaskContract<A, R>,
  options?: TaskBindingOptions,
): <M extends ContractMethod<A, R>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
export function Task(first: TaskOptions | TaskContract = {}, options: TaskBindingOptions = {}): MethodDecorator {
  const metadata: TaskMetadata = first instanceof TaskContract ? { ...options, contract: first } : first;
  return SetMetadata(TASK_METADATA, metadata);
}
