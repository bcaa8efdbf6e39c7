import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { definedContracts } from '../task/task-contract.js';
import type { TaskMetadata } from '../task/task.decorator.js';
import { DEFAULT_BACKEND, TASK_METADATA } from '../threadmill.constants.js';
import { patternMethod } from '../transport/handler-explorer.js';
import { THREADMILL_TRANSPORT } from '../transport/threadmill-transport.js';

/**
 * The queues backend `backend`'s `@Task()` methods and handlers
 * (`@EventPattern` / `@MessagePattern` extras) name, read from their
 * metadata before any provider exists, and those of its task contracts
 * defined in the process (a producer enqueues through them): the testing
 * module's default `queues`, so an app boots without repeating its queue list.
 */
export function discoverQueues(discovery: DiscoveryService, scanner: MetadataScanner, backend: string): string[] {
  const queues = new Set<string>(['default']);
  for (const { settings } of definedContracts()) if (settings.backend === backend) queues.add(settings.queue);
  for (const wrapper of [...discovery.getProviders(), ...discovery.getControllers()]) {
    const prototype = (wrapper.metatype as { prototype?: Record<string, unknown> } | undefined)?.prototype;
    if (typeof wrapper.metatype !== 'function' || !prototype) continue;
    for (const name of scanner.getAllMethodNames(prototype)) {
      const method = prototype[name];
      if (typeof method !== 'function') continue;
      const queue = taskQueue(method, backend) ?? handlerQueue(method, backend);
      if (typeof queue === 'string') queues.add(queue);
    }
  }
  return [...queues];
}

/** The queue a `@Task()` method of `backend` names, if any. */
function taskQueue(method: Function, backend: string): unknown {
  const metadata = Reflect.getMetadata(TASK_METADATA, method) as TaskMetadata | undefined;
  const owner = metadata?.contract?.settings.backend ?? metadata?.backend ?? DEFAULT_BACKEND;
  return owner === backend ? (metadata?.contract?.settings.queue ?? metadata?.queue) : undefined;
}

/** The queue the extras of a handler of `backend` that Threadmill serves name, if any. */
function handlerQueue(method: Function, backend: string): unknown {
  const handler = patternMethod(method);
  if (!handler || (handler.transport !== undefined && handler.transport !== THREADMILL_TRANSPORT)) return undefined;
  return (handler.extras?.['backend'] ?? DEFAULT_BACKEND) === backend ? handler.extras?.['queue'] : undefined;
}
