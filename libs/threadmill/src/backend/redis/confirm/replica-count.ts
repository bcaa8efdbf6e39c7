import type { Logger } from '@nestjs/common';
import { Cluster } from 'ioredis';
import type { ResolvedEnqueueConfirmation } from '../../../records/enqueue-confirmation.js';
import type { RedisClient } from '../redis-client.js';
import { parseInfo } from '../redis-info.js';

/**
 * At boot with `confirmEnqueues`: warns, naming the master and the counts,
 * when a master has fewer replicas connected than a store must be confirmed
 * by (`INFO replication`, `connected_slaves`). A warning, not a failed boot:
 * the count is the state of the moment (a replica restarting or resyncing
 * during a deploy), and each store it affects fails loudly by itself, with
 * `UnconfirmedEnqueueError`, until enough replicas are connected.
 */
export async function checkReplicaCount(
  client: RedisClient,
  describe: string,
  { replicas, timeoutMs }: ResolvedEnqueueConfirmation,
  logger: Logger,
): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    const where = client instanceof Cluster ? `${node.options.host}:${node.options.port}` : describe;
    let connected: number;
    try {
      connected = Number(parseInfo(await node.info('replication')).get('connected_slaves') ?? 0);
    } catch (error) {
      logger.warn(`Could not count the replicas of Redis at ${where} (INFO failed: ${(error as Error).message}).`);
      continue;
    }
    if (connected >= replicas) continue;
    logger.warn(
      `confirmEnqueues asks for ${replicas} replica(s), but the Redis master at ${where} has ${connected} ` +
        `connected: until more connect, every enqueue it stores throws UnconfirmedEnqueueError after ${timeoutMs} ` +
        'ms (its runs stored, not confirmed). Add replicas (replicaof), or lower confirmEnqueues.replicas.',
    );
  }
}
