import type { RedisClient } from '../redis/redis-client.js';

/** How recently a process must have recorded its partition count for another count to be a mismatch. */
export const SEEN_WITHIN_MS = 60_000;
/** How often a running process records its count again and reads the others'. */
export const RECORD_EVERY_MS = 15_000;

/** What a process knows of the partition counts on its backend. */
export interface PartitionView {
  /** This process's partition count (`partitions` option): where it routes new runs. */
  readonly partitions: number;
  /** Partitions that may hold runs: the largest count recorded; its workers consume them all. */
  readonly span: number;
  /** Other counts processes recorded within {@link SEEN_WITHIN_MS}, with when (epoch ms): a mismatch when any. */
  readonly others: readonly { readonly partitions: number; readonly seenAt: number }[];
}

/**
 * The record of partition counts, in the home keyspace (`partition-counts`,
 * a ZSET: member a count, score when a process with it last recorded itself,
 * by Redis's clock as the process estimates it, so that hosts whose clocks
 * disagree agree on what is stale). Its largest member is the span: partitions up to it may
 * hold runs, so workers consume them all and lookups find their runs. A
 * process records its count at boot and every {@link RECORD_EVERY_MS}; one
 * that finds another count recorded recently reports the mismatch.
 */
export class PartitionRecord {
  /**
   * @param now Redis's time as this process estimates it (`RedisTaskBackend.redisNow`)
   */
  constructor(
    private readonly client: RedisClient,
    private readonly key: string,
    readonly now: () => number,
  ) {}

  /** Records that a process with `partitions` runs now; returns the view with the record after it. */
  async register(partitions: number): Promise<PartitionView> {
    const replies = await this.client
      .multi()
      .zadd(this.key, this.now(), String(partitions))
      .zrange(this.key, 0, -1, 'WITHSCORES')
      .exec();
    const [error, flat] = replies![1]!;
    if (error) throw error;
    return viewOf(partitions, flat as string[], this.now());
  }

  /** The view of a process with `partitions`, without recording it (for observers). */
  async view(partitions: number): Promise<PartitionView> {
    return viewOf(partitions, await this.client.zrange(this.key, 0, -1, 'WITHSCORES'), this.now());
  }

  /** The counts recorded, largest first, without recording anything (for processes of one partition). */
  async read(): Promise<{ partitions: number; seenAt: number }[]> {
    const flat = await this.client.zrange(this.key, 0, -1, 'WITHSCORES');
    return entriesOf(flat).sort((a, b) => b.partitions - a.partitions);
  }

  /**
   * Removes every count last recorded before `before` (epoch ms), in one
   * command: a count recorded again since it was read is kept, whatever
   * happened in between (see `PartitionRetirement`). Returns the view of a
   * process with `partitions` after it.
   */
  async dropStale(partitions: number, before: number): Promise<PartitionView> {
    const replies = await this.client
      .multi()
      .zremrangebyscore(this.key, '-inf', `(${before}`)
      .zrange(this.key, 0, -1, 'WITHSCORES')
      .exec();
    const [error, flat] = replies![1]!;
    if (error) throw error;
    return viewOf(partitions, flat as string[], this.now());
  }

  /**
   * Records `partitions` again, as last seen at `seenAt`, unless the record
   * holds it: a dropped count whose partitions turned out to hold runs comes
   * back into the span, without looking like a process that runs with it.
   */
  async restore(partitions: number, seenAt: number): Promise<void> {
    await this.client.zadd(this.key, 'NX', seenAt, String(partitions));
  }
}

function entriesOf(flat: readonly string[]): { partitions: number; seenAt: number }[] {
  const entries: { partitions: number; seenAt: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2)
    entries.push({ partitions: Number(flat[i]), seenAt: Number(flat[i + 1]) });
  return entries;
}

/** The view of a process with `partitions` from the record's entries, at `now`. */
export function viewOf(partitions: number, flat: readonly string[], now: number): PartitionView {
  const entries = entriesOf(flat);
  const span = Math.max(partitions, ...entries.map((entry) => entry.partitions));
  const others = entries.filter((entry) => entry.partitions !== partitions && entry.seenAt >= now - SEEN_WITHIN_MS);
  return { partitions, span, others };
}

/** What a process says about a mismatch it sees (empty when there is none). */
export function mismatchMessage(view: PartitionView): string {
  if (view.others.length === 0) return '';
  const counts = view.others.map((other) => other.partitions).join(', ');
  return (
    `Processes on this backend run with partitions: ${counts}, and this one with ${view.partitions}: ` +
    `every worker consumes all ${view.span} partitions that may hold runs, so nothing is lost, but new runs are ` +
    'routed differently (per-key order and dedupe keys hold only within one count). Give every process the same ' +
    'partitions option (the "Scale-out" page of the Threadmill docs).'
  );
}
