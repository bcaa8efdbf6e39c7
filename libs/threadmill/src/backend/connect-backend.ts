import type { Logger } from '@nestjs/common';
import type { RedisConnections } from './redis/redis-connections.js';
import { checkPartitionRecord } from './partitioned/create-backend.js';
import { checkRedisSafety } from './redis/redis-safety.js';
import { checkReplicaCount } from './redis/confirm/replica-count.js';
import { resolveEnqueueConfirmation } from '../records/enqueue-confirmation.js';
import type { TaskBackend } from './task-backend.js';
import { writeQueueLimits } from './write-queue-limits.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';

/**
 * Makes a backend ready for use: waits for Redis, refuses an evicting one
 * (unless allowed), warns when `confirmEnqueues` asks for more replicas than
 * a master has, brings the keys to this version's layout and records
 * the queues for inspectors. On failure it closes the connections (a boot
 * that failed must not keep reconnecting) and throws.
 */
export async function connectBackend(
  connections: RedisConnections,
  backend: TaskBackend,
  options: ThreadmillOptions,
  logger: Logger,
): Promise<void> {
  try {
    await connections.ready();
    await checkRedisSafety(connections.client, connections.describe(), options.allowEviction, logger);
    const confirmation = resolveEnqueueConfirmation(options.confirmEnqueues);
    if (confirmation) await checkReplicaCount(connections.client, connections.describe(), confirmation, logger);
    // Before anything reads or writes a run: the keys must be in this version's layout.
    await backend.prepare();
    await checkPartitionRecord(backend, logger);
    // Inspectors list queues from here: they do not know the application's options.
    await backend.registerQueues(options.queues);
    await writeQueueLimits(backend, options);
  } catch (error) {
    await connections.close();
    throw error;
  }
}
