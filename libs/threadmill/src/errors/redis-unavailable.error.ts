import { ThreadmillError } from './threadmill.error.js';

/**
 * What to do about a Redis that does not answer, for the deployment `where`
 * names (as `RedisConnections.describe()` words it): the user has their own
 * Redis, so the advice names the address tried, never a way to start one
 * that only this repository has.
 */
function adviceFor(where: string): string {
  if (where.startsWith('Redis Cluster')) {
    return "Check that the cluster's nodes are running and reachable from this host, or fix the `connection` option.";
  }
  if (where.startsWith('Redis Sentinel')) {
    return (
      'Check that the sentinels are running, reachable from this host and monitoring that primary, ' +
      'or fix the `connection` option.'
    );
  }
  return (
    `Start a Redis server reachable at ${where.replace(/\/\d+$/, '')} (redis-server, or your platform's Redis), ` +
    'or fix the `connection` option.'
  );
}

/** Redis could not be reached (at boot, or within an operation's bounded wait). */
export class RedisUnavailableError extends ThreadmillError {
  /**
   * @param where the address tried (`host:port/db`, `unix:path`, a Cluster's or Sentinel's nodes)
   * @param advice what to do, when the caller knows better than the default (an enqueue that may have been stored)
   */
  constructor(
    readonly where: string,
    cause: unknown,
    advice = adviceFor(where),
  ) {
    super(`Cannot reach Redis at ${where}: ${cause instanceof Error ? cause.message : String(cause)}. ${advice}`, {
      cause,
    });
  }
}
