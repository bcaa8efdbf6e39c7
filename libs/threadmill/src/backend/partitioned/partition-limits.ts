import { PartitionedLimitError } from '../../errors/partitioned-limit.error.js';
import type { StoredRateLimit } from '../task-backend.js';

// A queue's concurrency cap and rate limit are read by every claim of one
// partition, which cannot see the others: each partition holds a share, and
// the shares add up to the queue's value, so the global value is never
// exceeded (a partition whose runs are gone leaves its share unused).

/** Partition `p`'s share of `total` over `span` partitions: the whole part, and one more for the first `total % span`. */
export function shareOf(total: number, p: number, span: number): number {
  return Math.floor(total / span) + (p < total % span ? 1 : 0);
}

/** Each partition's cap for a queue capped at `cap` (null: none). */
export function capShares(queue: string, cap: number | null, span: number): (number | null)[] {
  if (cap !== null && cap < span) throw new PartitionedLimitError(queue, 'concurrency cap', cap, span);
  return Array.from({ length: span }, (_, p) => (cap === null ? null : shareOf(cap, p, span)));
}

/** Each partition's rate limit for a queue limited to `limit.max` per window (null: none). */
export function rateShares(queue: string, limit: StoredRateLimit | null, span: number): (StoredRateLimit | null)[] {
  if (limit !== null && limit.max < span) throw new PartitionedLimitError(queue, 'rate limit max', limit.max, span);
  return Array.from({ length: span }, (_, p) =>
    limit === null ? null : { ...limit, max: shareOf(limit.max, p, span) },
  );
}

/** A queue's cap from its partitions' shares: their sum, or null when the home partition has none. */
export function capFromShares(shares: readonly (number | null)[]): number | null {
  if (shares[0] === null || shares[0] === undefined) return null;
  return shares.reduce<number>((total, share) => total + (share ?? 0), 0);
}

/** A queue's rate limit from its partitions' shares: home's window, their maxima summed; null when home has none. */
export function rateFromShares(shares: readonly (StoredRateLimit | null)[]): StoredRateLimit | null {
  const home = shares[0];
  if (home === null || home === undefined) return null;
  return { ...home, max: shares.reduce((total, share) => total + (share?.max ?? 0), 0) };
}
