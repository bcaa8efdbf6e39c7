import type { Logger } from '@nestjs/common';
import { resolveEnqueueConfirmation, type EnqueueConfirmation } from '../../records/enqueue-confirmation.js';
import { ConfirmedStores } from '../redis/confirm/confirmed-stores.js';
import type { RedisConnections } from '../redis/redis-connections.js';
import { RedisTaskBackend, type RedisBackendSettings } from '../redis/redis.backend.js';
import type { TaskBackend } from '../task-backend.js';
import { PartitionedTaskBackend } from './partitioned.backend.js';
import { PartitionRecord } from './partition-record.js';

/**
 * The backend of a module's options: a Redis backend on one hash tag, or,
 * with `partitions` above 1, a partitioned backend over that many; with
 * `confirmEnqueues`, its stores confirmed by the replicas.
 */
export function createBackend(
  connections: RedisConnections,
  options: RedisBackendSettings & {
    readonly partitions: number;
    readonly confirmEnqueues?: EnqueueConfirmation | false;
  },
): RedisTaskBackend | PartitionedTaskBackend {
  const confirmation = resolveEnqueueConfirmation(options.confirmEnqueues);
  // One for every partition: stores of partitions on one master share its WAITs.
  const settings = confirmation ? { ...options, confirmed: new ConfirmedStores(connections, confirmation) } : options;
  return settings.partitions > 1
    ? new PartitionedTaskBackend(connections, settings)
    : new RedisTaskBackend(connections, settings);
}

/**
 * At the boot of a process of one partition: partitioned processes recorded
 * their counts on this backend (runs may wait in partitions this process
 * neither routes to nor consumes), so it records its own (they report the
 * mismatch) and warns. A backend no partitioned process ever used has no
 * record: nothing is written, the layout stays exactly that of one hash tag.
 */
export async function checkPartitionRecord(backend: TaskBackend, logger: Logger): Promise<void> {
  if (!(backend instanceof RedisTaskBackend)) return;
  const record = new PartitionRecord(backend.connections.client, `${backend.keys.prefix}partition-counts`, () =>
    backend.redisNow(),
  );
  const counts = await record.read();
  if (counts.length === 0 || counts[0]!.partitions <= 1) return;
  await record.register(1);
  logger.warn(
    `Processes on this backend recorded partitions: ${counts.map((c) => c.partitions).join(', ')}, and this one runs ` +
      `with 1: it routes every run to the home partition and consumes no other, so runs in the other ` +
      `${counts[0]!.partitions - 1} partition(s) wait for workers that consume them. Give every process the same ` +
      'partitions option (the "Scale-out" page of the Threadmill docs).',
  );
}

/**
 * The prepared backend a standalone inspector observes: over every partition
 * the backend's processes recorded (without recording a count of its own),
 * or the one hash tag of a backend never partitioned.
 */
export async function observedBackend(
  connections: RedisConnections,
  settings: RedisBackendSettings,
): Promise<RedisTaskBackend | PartitionedTaskBackend> {
  const home = new RedisTaskBackend(connections, settings);
  await home.prepare();
  const [largest] = await new PartitionRecord(connections.client, `${home.keys.prefix}partition-counts`, () =>
    home.redisNow(),
  ).read();
  if (largest === undefined || largest.partitions <= 1) return home;
  const backend = new PartitionedTaskBackend(connections, {
    ...settings,
    partitions: largest.partitions,
    observer: true,
  });
  await backend.prepare();
  return backend;
}
