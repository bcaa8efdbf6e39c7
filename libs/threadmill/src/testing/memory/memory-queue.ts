import { SEGMENTS } from '../../records/backend-records.js';
import type { MinuteMetrics, Segment } from '../../backend/task-backend.js';

type MinuteField = Exclude<keyof MinuteMetrics, 'at'>;

/**
 * One queue's segments, as the Redis backend's sorted sets hold them: run id
 * → score (ready: priority then FIFO; deferred: due time; running: lease
 * deadline; finished: when they finished), with its counters and
 * per-minute metrics.
 */
export class MemoryQueue {
  /** Flow nodes WAITING for their dependencies, by enqueue time: no claim reads them. */
  readonly waiting = new Map<string, number>();
  readonly ready = new Map<string, number>();
  readonly deferred = new Map<string, number>();
  readonly running = new Map<string, number>();
  readonly successful = new Map<string, number>();
  readonly failed = new Map<string, number>();
  readonly quarantined = new Map<string, number>();
  readonly cancelled = new Map<string, number>();
  /** How long each run of `successful`, `failed` and `cancelled` is kept (ms): its outcome's default TTL, or its task's own. */
  readonly keptFor = new Map<string, number>();
  readonly stats: Record<string, number> = {};
  private readonly minutes = new Map<number, Record<MinuteField, number>>();

  constructor(readonly name: string) {}

  segment(segment: Segment): Map<string, number> {
    return this[segment];
  }

  /** A segment's ids in the order Redis lists them: pending ones by score, finished ones newest first. */
  ordered(segment: Segment): string[] {
    const entries = [...this.segment(segment)];
    const newestFirst =
      segment === 'successful' || segment === 'failed' || segment === 'quarantined' || segment === 'cancelled';
    // Array#sort is stable: equal scores keep their insertion order, as a ZSET orders equal scores by member.
    entries.sort(([, a], [, b]) => (newestFirst ? b - a : a - b));
    return entries.map(([id]) => id);
  }

  /** Removes `id` from every segment. */
  remove(id: string): void {
    for (const segment of SEGMENTS) {
      this.segment(segment).delete(id);
    }
    this.keptFor.delete(id);
  }

  /** Adds to a lifetime counter (`enqueued`, `succeeded`, `staleAcks`, ...). */
  count(field: string, by = 1): void {
    if (by !== 0) this.stats[field] = (this.stats[field] ?? 0) + by;
  }

  /** Adds to the current minute's bucket, and to the lifetime counter of the same name where Redis keeps one. */
  countMinute(now: number, field: MinuteField, by = 1): void {
    if (by === 0) return;
    const minute = Math.floor(now / 60_000);
    let bucket = this.minutes.get(minute);
    if (!bucket) {
      bucket = {
        enqueued: 0,
        started: 0,
        waitMs: 0,
        succeeded: 0,
        failed: 0,
        retried: 0,
        quarantined: 0,
        cancelled: 0,
      };
      this.minutes.set(minute, bucket);
    }
    bucket[field] += by;
    if (field !== 'started' && field !== 'waitMs') this.count(field, by);
  }

  /** The buckets of the `count` minutes up to `now`, oldest first. */
  metrics(now: number, count: number): MinuteMetrics[] {
    const current = Math.floor(now / 60_000);
    const minutes: MinuteMetrics[] = [];
    for (let m = current - count + 1; m <= current; m++) {
      const bucket = this.minutes.get(m);
      minutes.push({
        at: m * 60_000,
        enqueued: bucket?.enqueued ?? 0,
        started: bucket?.started ?? 0,
        waitMs: bucket?.waitMs ?? 0,
        succeeded: bucket?.succeeded ?? 0,
        failed: bucket?.failed ?? 0,
        retried: bucket?.retried ?? 0,
        quarantined: bucket?.quarantined ?? 0,
        cancelled: bucket?.cancelled ?? 0,
      });
    }
    return minutes;
  }
}
