import type { RedisConnections } from '../redis/redis-connections.js';
import { RedisTaskBackend, type RedisBackendSettings } from '../redis/redis.backend.js';
import { PartitionHealth } from './partition-health.js';
import { PartitionRouter } from './partition-router.js';

/** Settings of a partitioned backend: the Redis backend's, and how many partitions take new runs. */
export interface PartitionedBackendSettings extends RedisBackendSettings {
  readonly partitions: number;
  /**
   * An observer (a standalone inspector) reads the partition record without
   * recording a count of its own: it runs no producer or worker.
   */
  readonly observer?: boolean;
}

/**
 * The partitions of one backend: a {@link RedisTaskBackend} per partition,
 * each on its own hash tag, sharing one set of connections, and the router
 * that says where a run is. What the partitioned backend's parts share.
 */
export class PartitionSet {
  readonly router: PartitionRouter;
  /** The partitions whose master this process found unreachable lately: new runs without a key avoid them. */
  readonly health: PartitionHealth;
  /** The keyspace alias of each partition known so far, home first (see `PartitionTags`). */
  aliases: string[];
  private readonly parts: RedisTaskBackend[] = [];

  constructor(
    readonly connections: RedisConnections,
    readonly settings: PartitionedBackendSettings,
  ) {
    // A probe reads one key of the partition's slot: its master answers, or the call fails.
    this.health = new PartitionHealth((p) => connections.client.exists(this.part(p).keys.layout));
    this.router = new PartitionRouter(settings.partitions, settings.partitions, (p) => this.health.avoids(p));
    this.aliases = [settings.alias];
  }

  /** Partitions that may hold runs now: every worker consumes them all. */
  get span(): number {
    return this.router.span;
  }

  /** Partition `p`'s backend: a Redis backend on its own hash tag. */
  part(p: number): RedisTaskBackend {
    const alias = this.aliases[p];
    if (alias === undefined) throw new Error(`Partition ${p} is used before its alias was read (prepare first).`);
    return (this.parts[p] ??= new RedisTaskBackend(this.connections, { ...this.settings, alias }));
  }

  /** Partitions that may hold runs, home first. */
  partitions(): number[] {
    return Array.from({ length: this.span }, (_, p) => p);
  }

  /** `call` on every partition that may hold runs, in parallel; the replies in partition order. */
  every<R>(call: (part: RedisTaskBackend, p: number) => Promise<R>): Promise<R[]> {
    return Promise.all(this.partitions().map((p) => call(this.part(p), p)));
  }

  /** `call` on partition `p`, telling {@link health} whether its master answered. */
  async watched<R>(p: number, call: (part: RedisTaskBackend) => Promise<R>): Promise<R> {
    try {
      const reply = await call(this.part(p));
      this.health.answered(p);
      return reply;
    } catch (error) {
      this.health.failed(p, error);
      throw error;
    }
  }

  /** How long an idle consumer of `queues` may wait: at most until a rate limit of any partition frees a place. */
  idleWaitMs(queues: readonly string[], timeoutMs: number): number {
    return this.parts.reduce((wait, part) => Math.min(wait, part.idleWaitMs(queues, wait)), timeoutMs);
  }
}
