import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isConnectionFailure } from '../../libs/threadmill/src/backend/redis/redis-connections.js';
import { isUnreachable } from '../../libs/threadmill/src/backend/partitioned/partition-health.js';
import { RedisUnavailableError } from '../../libs/threadmill/src/errors/redis-unavailable.error.js';

describe('connection failures', () => {
  it('are the socket failures and a Redis Cluster client finding no master of a slot', () => {
    for (const message of [
      'Connection is closed.',
      "Stream isn't writeable and enableOfflineQueue options is false",
      'Command timed out',
      'connect ECONNREFUSED 127.0.0.1:7000',
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      'Failed to refresh slots cache.',
    ]) {
      expect(isConnectionFailure(new Error(message)), message).toBe(true);
    }
    const retries = new Error('Reached the max retries per request limit (which is 20).');
    retries.name = 'MaxRetriesPerRequestError';
    expect(isConnectionFailure(retries)).toBe(true);
  });

  it('are not Redis refusing a command, nor any other error', () => {
    expect(isConnectionFailure(new ReplyError('MOVED 887 127.0.0.1:7001'))).toBe(false);
    expect(isConnectionFailure(new ReplyError('ERR Connection is closed by a script'))).toBe(false);
    expect(isConnectionFailure(new Error('Invalid argument'))).toBe(false);
    expect(isConnectionFailure('Connection is closed.')).toBe(false);
  });

  it("count a Cluster's CLUSTERDOWN as a partition's master away, not as a failed connection", () => {
    const down = new ReplyError('CLUSTERDOWN The cluster is down');
    expect(isConnectionFailure(down)).toBe(false);
    expect(isUnreachable(down)).toBe(true);
    expect(isUnreachable(new ReplyError('NOSCRIPT No matching script'))).toBe(false);
  });

  it('tell a user what to do with the address tried, not how this repository starts its Redis', () => {
    const refused = new Error('connect ECONNREFUSED 10.0.0.5:6380');
    expect(new RedisUnavailableError('10.0.0.5:6380/2', refused).message).toBe(
      'Cannot reach Redis at 10.0.0.5:6380/2: connect ECONNREFUSED 10.0.0.5:6380. Start a Redis server reachable ' +
        "at 10.0.0.5:6380 (redis-server, or your platform's Redis), or fix the `connection` option.",
    );
    expect(new RedisUnavailableError('unix:/run/redis.sock', refused).message).toMatch(
      /Start a Redis server reachable at unix:\/run\/redis\.sock \(/,
    );
    expect(new RedisUnavailableError('Redis Cluster 10.0.0.1:7000,10.0.0.2:7000', refused).message).toMatch(
      /Check that the cluster's nodes are running and reachable from this host, or fix the `connection` option\.$/,
    );
    expect(new RedisUnavailableError('Redis Sentinel cache via 10.0.0.9:26379', refused).message).toMatch(
      /Check that the sentinels are running, reachable from this host and monitoring that primary/,
    );
    // A caller that knows better says so instead.
    expect(new RedisUnavailableError('h:1/0', refused, 'Retry with the same `id`.').message).toMatch(
      /ECONNREFUSED 10\.0\.0\.5:6380\. Retry with the same `id`\.$/,
    );
  });
});
