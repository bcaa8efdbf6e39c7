import { SEGMENTS } from '../../records/backend-records.js';
import type { MinuteMetrics, QueueCounts } from '../task-backend.js';

// How the answers of several partitions make one queue's: sums for counts and
// counters, minute by minute for metrics, merged pages for lists.

/** The count fields of a minute's metrics. */
const MINUTE_FIELDS = [
  'enqueued',
  'started',
  'waitMs',
  'succeeded',
  'failed',
  'retried',
  'quarantined',
  'cancelled',
] as const;

/** Adds `fields` of `from` into `into`. */
function addInto<T extends Record<F, number>, F extends string>(into: T, from: T, fields: readonly F[]): void {
  for (const field of fields) (into as Record<F, number>)[field] += from[field];
}

/** Per queue, the segment counts of every partition summed. */
export function sumCounts(perPartition: readonly QueueCounts[][]): QueueCounts[] {
  return perPartition[0]!.map((first, q) => {
    const total = { ...first };
    for (let p = 1; p < perPartition.length; p++) addInto(total, perPartition[p]![q]!, SEGMENTS);
    return total;
  });
}

/** The counters of every partition summed, field by field. */
export function sumStats(perPartition: readonly Record<string, number>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const stats of perPartition)
    for (const [field, n] of Object.entries(stats)) total[field] = (total[field] ?? 0) + n;
  return total;
}

/**
 * The per-minute metrics of every partition summed minute by minute. Each
 * partition's minutes are stamped by its own master's clock: they are
 * matched by their start (`at`), on the home partition's window.
 */
export function sumMetrics(perPartition: readonly { now: number; minutes: MinuteMetrics[] }[]): {
  now: number;
  minutes: MinuteMetrics[];
} {
  const [home, ...others] = perPartition;
  const minutes = home!.minutes.map((minute) => ({ ...minute }));
  const byStart = new Map(minutes.map((minute) => [minute.at, minute]));
  for (const other of others) {
    for (const minute of other.minutes) {
      const total = byStart.get(minute.at);
      if (total) addInto(total, minute, MINUTE_FIELDS);
    }
  }
  return { now: home!.now, minutes };
}

/**
 * One page of a segment over every partition: the partitions' pages (each
 * the first `offset + limit` ids of its segment, in its order) taken in turn,
 * one id of each partition after the other, as consumers rotating over the
 * partitions serve them; then the page at `offset`.
 */
export function interleavePages(pages: readonly string[][], offset: number, limit: number): string[] {
  const merged: string[] = [];
  const longest = Math.max(0, ...pages.map((page) => page.length));
  for (let i = 0; i < longest && merged.length < offset + limit; i++) {
    for (const page of pages) if (i < page.length) merged.push(page[i]!);
  }
  return merged.slice(offset, offset + limit);
}

/** The leases of every partition, earliest deadline first. */
export function mergeLeases(
  perPartition: readonly { id: string; deadline: number }[][],
): { id: string; deadline: number }[] {
  return perPartition.flat().sort((a, b) => a.deadline - b.deadline);
}
