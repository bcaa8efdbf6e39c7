import type { Logger } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { UnsafeRedisError } from '../../errors/unsafe-redis.error.js';
import type { RedisClient } from './redis-client.js';
import { parseInfo } from './redis-info.js';
import { warnOnce } from './safety-warnings.js';

/**
 * Checks that Redis keeps what Threadmill stores: every primary must use
 * `maxmemory-policy noeviction` (eviction silently deletes runs) unless
 * `allowEviction` is set, and must be a primary (a replica cannot take
 * writes, and reading from one could miss acknowledged state). Warns when
 * AOF is off (then a Redis restart loses everything since the last
 * snapshot) and when no `maxmemory` is set (then the host's OOM killer, not
 * Redis, decides what happens when memory runs out).
 * Reads `INFO`, which managed services allow where `CONFIG` is renamed.
 * Each warning is logged once per server and process group (`warnOnce`): a
 * pool's supervisor says it, its members and clients do not repeat it.
 * @throws UnsafeRedisError
 */
export async function checkRedisSafety(
  client: RedisClient,
  describe: string,
  allowEviction: boolean,
  logger: Logger,
): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    const where = client instanceof Cluster ? `${node.options.host}:${node.options.port}` : describe;
    let info: Map<string, string>;
    try {
      info = parseInfo(await node.info());
    } catch (error) {
      logger.warn(`Could not verify the settings of Redis at ${where} (INFO failed: ${(error as Error).message}).`);
      continue;
    }
    if (info.get('role') === 'slave') {
      throw new UnsafeRedisError(
        `Redis at ${where} is a replica: Threadmill must write to (and read from) the primary. ` +
          'Point the connection at the primary.',
      );
    }
    // A server that hides its run_id is told apart by its address.
    const server = info.get('run_id') ?? where;
    const warn = (warning: string, message: string) => warnOnce(logger, `${server}|${warning}`, message);
    const policy = info.get('maxmemory_policy');
    if (policy && policy !== 'noeviction') {
      if (!allowEviction) {
        throw new UnsafeRedisError(
          `Redis at ${where} has maxmemory-policy ${policy}: when memory runs out it evicts keys, silently deleting ` +
            'task runs. Set `maxmemory-policy noeviction` (redis.conf, or CONFIG SET maxmemory-policy noeviction), ' +
            'or pass allowEviction: true to accept losing runs.',
        );
      }
      warn(
        `eviction:${policy}`,
        `Redis at ${where} has maxmemory-policy ${policy}: it may evict (lose) task runs (allowEviction is set).`,
      );
    }
    if (info.get('maxmemory') === '0') {
      warn(
        'no-maxmemory',
        `Redis at ${where} has no maxmemory: it grows until the host runs out of memory, and then the OS kills it, ` +
          'losing what AOF has not saved. Set maxmemory (redis.conf, or CONFIG SET maxmemory) below the memory the ' +
          'host can give Redis: a full Redis refuses enqueues (RedisOutOfMemoryError) and keeps every run stored.',
      );
    }
    if (info.get('aof_enabled') === '0') {
      warn(
        'aof-off',
        `Redis at ${where} has AOF off (appendonly no): a Redis restart loses runs enqueued since its last snapshot. ` +
          'Enable appendonly yes, with appendfsync always to lose nothing confirmed in a crash ' +
          '(everysec may lose the last seconds of writes).',
      );
    }
  }
}
