import type { StoredRateLimit } from '../task-backend.js';
import type { RedisTaskBackend } from '../redis/redis.backend.js';
import { capFromShares, capShares, rateFromShares, rateShares } from './partition-limits.js';
import type { PartitionSet } from './partition-set.js';

/**
 * The queues' concurrency caps and rate limits of a partitioned backend:
 * each partition holds a share (see `partition-limits.ts`), written and read
 * on every partition. Task limits are not split: each partition holds them
 * whole, as a limit group's runs all live in one partition.
 */
export class PartitionedLimits {
  constructor(private readonly set: PartitionSet) {}

  async setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }> {
    const shares = capShares(queue, cap, this.set.span);
    const replies = await this.set.every((part, p) => part.setConcurrencyCap(queue, shares[p]!));
    return { previous: capFromShares(replies.map((reply) => reply.previous)) };
  }

  async concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    const shares = await this.set.every((part) => part.concurrencyCaps(queues));
    return queues.map((_, q) => capFromShares(shares.map((caps) => caps[q]!)));
  }

  async setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }> {
    const shares = rateShares(queue, limit, this.set.span);
    const replies = await this.set.every((part, p) => part.setRateLimit(queue, shares[p]!));
    return { previous: rateFromShares(replies.map((reply) => reply.previous)) };
  }

  async rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    const shares = await this.set.every((part) => part.rateLimits(queues));
    return queues.map((_, q) => rateFromShares(shares.map((limits) => limits[q]!)));
  }

  /**
   * Before partitions `to` to `from - 1` leave the span (dropped once
   * drained, see `PartitionRetirement`), moves their shares of every
   * registered queue's cap and rate limit to the partitions that stay, so that
   * each queue keeps its value. The leaving shares are removed first: a
   * failure half way leaves a queue below its value, never above it. Nobody
   * claims from a partition out of the span, and one that comes back gets a
   * share again when the span grows (`spread`).
   */
  async shrink(from: number, to: number): Promise<void> {
    const queues = await this.set.part(0).knownQueues();
    if (queues.length === 0) return;
    const upTo = <R>(n: number, call: (part: RedisTaskBackend, p: number) => Promise<R>) =>
      Promise.all(Array.from({ length: n }, (_, p) => call(this.set.part(p), p)));
    const [caps, limits] = await Promise.all([
      upTo(from, (part) => part.concurrencyCaps(queues)),
      upTo(from, (part) => part.rateLimits(queues)),
    ]);
    const leaving = (call: (part: RedisTaskBackend) => Promise<unknown>) =>
      Promise.all(Array.from({ length: from - to }, (_, i) => call(this.set.part(to + i))));
    for (const [q, queue] of queues.entries()) {
      const cap = capFromShares(caps.map((shares) => shares[q]!));
      if (cap !== null && cap >= to) {
        await leaving((part) => part.setConcurrencyCap(queue, null));
        const shares = capShares(queue, cap, to);
        await upTo(to, (part, p) => part.setConcurrencyCap(queue, shares[p]!));
      }
      const limit = rateFromShares(limits.map((shares) => shares[q]!));
      if (limit !== null && limit.max >= to) {
        await leaving((part) => part.setRateLimit(queue, null));
        const shares = rateShares(queue, limit, to);
        await upTo(to, (part, p) => part.setRateLimit(queue, shares[p]!));
      }
    }
  }

  /**
   * Spreads every registered queue's cap and rate limit over the span again
   * (after it grew, new partitions have no share yet): the shares of each
   * add up to what they added up to before; and its pause (see
   * `spreadPauses`). Idempotent.
   */
  async spread(): Promise<void> {
    // Task limits are kept whole in every partition (a limit group lives in one): copied from home.
    for (const [task, limit] of await this.set.part(0).allTaskLimits()) {
      await this.set.every((part) => part.setTaskLimit(task, limit));
    }
    const queues = await this.set.part(0).knownQueues();
    if (queues.length === 0) return;
    await this.spreadPauses(queues);
    const [caps, limits] = await Promise.all([this.concurrencyCaps(queues), this.rateLimits(queues)]);
    const { span } = this.set;
    for (const [q, queue] of queues.entries()) {
      // A limit below the span cannot be split: it stays as it is, and the next setter is refused.
      if (caps[q] !== null && caps[q]! >= span) await this.setConcurrencyCap(queue, caps[q]!);
      if (limits[q] !== null && limits[q]!.max >= span) await this.setRateLimit(queue, limits[q]!);
    }
  }

  /**
   * Pauses, in every partition of the span, the queues paused in home (where
   * `pausedSince` reads): a partition created while a queue was paused must
   * not run its new runs. A resume may land between the read and the pause:
   * home is read again after, and a queue resumed meanwhile is resumed in
   * every partition, so that no partition stays paused behind a resumed home.
   * Idempotent.
   */
  private async spreadPauses(queues: readonly string[]): Promise<void> {
    const home = this.set.part(0);
    const pausedAt = await home.pausedSince(queues);
    const paused = queues.filter((_, q) => pausedAt[q] !== null);
    if (paused.length === 0) return;
    for (const queue of paused) await this.set.every((part) => part.pause(queue));
    const still = await home.pausedSince(paused);
    for (const [q, queue] of paused.entries()) {
      if (still[q] === null) await this.set.every((part) => part.resume(queue));
    }
  }
}
