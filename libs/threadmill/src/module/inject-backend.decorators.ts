import { Inject } from '@nestjs/common';
import { getTaskInspectorToken, getTaskQueueToken, getTaskSchedulerToken } from './backend-tokens.js';

/**
 * Injects backend `name`'s `TaskQueue` (the default backend's when omitted).
 *
 * @example
 * ```ts
 * constructor(@InjectTaskQueue('critical') private readonly critical: TaskQueue) {}
 * ```
 */
export function InjectTaskQueue(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getTaskQueueToken(name));
}

/** Injects backend `name`'s `TaskInspector` (the default backend's when omitted). */
export function InjectTaskInspector(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getTaskInspectorToken(name));
}

/** Injects backend `name`'s `TaskScheduler` (the default backend's when omitted). */
export function InjectTaskScheduler(name?: string): PropertyDecorator & ParameterDecorator {
  return Inject(getTaskSchedulerToken(name));
}
