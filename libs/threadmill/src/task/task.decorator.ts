import { SetMetadata } from '@nestjs/common';
import { TASK_METADATA } from '../threadmill.constants.js';
import type { TaskOptions } from './task-options.interface.js';

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
export const Task = (options: TaskOptions = {}): MethodDecorator => SetMetadata(TASK_METADATA, options);
