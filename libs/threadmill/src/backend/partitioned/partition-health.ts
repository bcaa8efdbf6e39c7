import { RedisUnavailableError } from '../../errors/redis-unavailable.error.js';
import { isConnectionFailure } from '../redis/redis-connections.js';

/**
 * How long new runs without a key avoid a partition after a call to it found
 * its master unreachable, before a probe asks it again: short, as a Redis
 * Cluster's failover takes seconds, and a probe is one read.
 */
export const UNREACHABLE_RECHECK_MS = 1_000;

/**
 * Whether `error` says a partition's master cannot be reached, as opposed to
 * Redis refusing one command: the connection failed, or a Redis Cluster
 * client found no master serving the slot (its redirections ran out, or the
 * cluster is down while it elects a replica).
 */
export function isUnreachable(error: unknown): boolean {
  if (error instanceof RedisUnavailableError || isConnectionFailure(error)) return true;
  // Redis's own refusal while the cluster elects a replica of the slot's master.
  return error instanceof Error && error.message.startsWith('CLUSTERDOWN');
}

/**
 * Which partitions a process saw unreachable lately. A store, claim, renewal
 * or broker step to a partition that failed with an unreachable master marks
 * it; round-robin routing then leaves it out of new runs without a key, so
 * that, while a master is away, enqueues go to the partitions that answer
 * instead of waiting on it and failing. Once {@link UNREACHABLE_RECHECK_MS}
 * passed, each look at a marked partition sends a probe (one at a time), and
 * the mark is lifted when the probe, or any other call to the partition,
 * answers. Runs routed by a key, or by an id, are not moved: the call that
 * failed fails, and so do those that follow while the master is away.
 */
export class PartitionHealth {
  /** Partition → when a call last found it unreachable (`performance.now()`). */
  private readonly unreachableAt = new Map<number, number>();
  /** Partition → when its probe under way was sent. */
  private readonly probes = new Map<number, number>();

  /** @param probe one read in partition `p`'s keyspace: resolves once its master answered */
  constructor(
    private readonly probe: (p: number) => Promise<unknown>,
    private readonly recheckMs = UNREACHABLE_RECHECK_MS,
  ) {}

  /** A call to partition `p` failed with `error`: marks it when its master was unreachable. */
  failed(p: number, error: unknown): void {
    if (isUnreachable(error)) this.unreachableAt.set(p, performance.now());
  }

  /** A call to partition `p` was answered: its master is reachable. */
  answered(p: number): void {
    if (this.unreachableAt.size > 0) this.unreachableAt.delete(p);
  }

  /** Whether new runs without a key should avoid partition `p` now (probing it once its recheck is due). */
  avoids(p: number): boolean {
    if (this.unreachableAt.size === 0) return false;
    const at = this.unreachableAt.get(p);
    if (at === undefined) return false;
    const now = performance.now();
    if (now - at >= this.recheckMs) this.sendProbe(p, now);
    return true;
  }

  /** The partitions marked unreachable now, in order. */
  unreachable(): number[] {
    return [...this.unreachableAt.keys()].sort((a, b) => a - b);
  }

  private sendProbe(p: number, now: number): void {
    const sentAt = this.probes.get(p);
    // A probe that got no answer within a recheck (a frozen master) is given up on.
    if (sentAt !== undefined && now - sentAt < this.recheckMs) return;
    this.probes.set(p, now);
    const settle = () => {
      if (this.probes.get(p) === now) this.probes.delete(p);
    };
    this.probe(p).then(
      () => {
        settle();
        this.answered(p);
      },
      () => {
        settle();
        // Answered with an error (a promoted replica still loading, say): not ready either.
        this.unreachableAt.set(p, performance.now());
      },
    );
  }
}
