import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { definedContracts } from '../task/task-contract.js';
import type { TaskMetadata } from '../task/task.decorator.js';
import { DEFAULT_BACKEND, TASK_METADATA } from '../threadmill.constants.js';

/**
 * The queues backend `backend`'s `@Task()` methods name, read from their
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
      const metadata = Reflect.getMetadata(TASK_METADATA, method) as TaskMetadata | undefined;
      const owner = metadata?.contract?.settings.backend ?? metadata?.backend ?? DEFAULT_BACKEND;
      if (owner !== backend) continue;
      const queue = metadata?.contract?.settings.queue ?? metadata?.queue;
      if (typeof queue === 'string') queues.add(queue);
    }
  }
  return [...queues];
}
