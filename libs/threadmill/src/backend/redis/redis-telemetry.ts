import type {
  MinuteMetrics,
  QueueCounts,
  Segment,
  StoredRateLimit,
  StoredTaskLimit,
  WorkerRecord,
} from '../task-backend.js';
import type { RedisClient } from './redis-client.js';
import type { RedisKeys } from './redis-keys.js';
import { FinishedIndexes } from './finished-indexes.js';
import { parseRateLimit } from './rate-limit-value.js';
import { parseTaskLimit } from './task-limit-value.js';
import { readyPageWithParked } from './parked-page.js';
import { runScript } from './scripts/redis-scripts.js';
import { ScriptKeys } from './scripts/script-keys.js';

const sum = (counts: number[]) => counts.reduce((total, n) => total + n, 0);

/** Order of each segment: pending ones as served, finished ones newest first. */
const NEWEST_FIRST: Record<Segment, boolean> = {
  waiting: false,
  ready: false,
  deferred: false,
  running: false,
  successful: true,
  failed: true,
  quarantined: true,
  cancelled: true,
};

/**
 * The read-only side of the Redis backend that observers use (inspector,
 * dashboard, metrics, health): counts, pages of ids, counters, per-minute
 * metrics, workers and leases. Plain reads, no scripts: none of them changes
 * a run. The caller waits for the connection first.
 */
export class RedisTelemetry {
  private readonly finished: FinishedIndexes;
  private readonly scriptKeys: ScriptKeys;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.finished = new FinishedIndexes(client, keys);
    this.scriptKeys = new ScriptKeys(keys);
  }

  /** Per queue: when it was paused (its pause flag, `lua/pause.lua`), or null. */
  async pausedSince(queues: readonly string[]): Promise<(number | null)[]> {
    if (queues.length === 0) return [];
    const flags = await this.client.mget(queues.map((queue) => this.keys.paused(queue)));
    return flags.map((flag) => (flag === null ? null : Number(flag)));
  }

  /** Per queue: its concurrency cap (`lua/cap.lua`), or null. */
  async concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    if (queues.length === 0) return [];
    const caps = await this.client.mget(queues.map((queue) => this.keys.cap(queue)));
    return caps.map((cap) => (cap === null ? null : Number(cap)));
  }

  /** Per queue: its rate limit (`lua/rate.lua`), or null. */
  async rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    if (queues.length === 0) return [];
    const limits = await this.client.mget(queues.map((queue) => this.keys.rate(queue)));
    return limits.map(parseRateLimit);
  }

  /** Per task: its limit (`lua/task-limit.lua`), or null. */
  /** Every task limit stored, by task. */
  async allTaskLimits(): Promise<Map<string, StoredTaskLimit>> {
    const fields = await this.client.hgetall(this.keys.taskLimits);
    const limits = new Map<string, StoredTaskLimit>();
    for (const [task, value] of Object.entries(fields)) {
      const limit = parseTaskLimit(value);
      if (limit !== null) limits.set(task, limit);
    }
    return limits;
  }

  async taskLimits(tasks: readonly string[]): Promise<(StoredTaskLimit | null)[]> {
    if (tasks.length === 0) return [];
    const limits = await this.client.hmget(this.keys.taskLimits, ...tasks);
    return limits.map(parseTaskLimit);
  }

  /** Live worker records (their heartbeat has not expired), by id. */
  async workers(): Promise<WorkerRecord[]> {
    const now = await this.serverNow();
    const ids = await this.client.zrangebyscore(this.keys.workers, now, '+inf');
    if (ids.length === 0) return [];
    const pipeline = this.client.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.worker(id));
    const records = ((await pipeline.exec()) ?? []).map(([, fields]) => fields as Record<string, string>);
    return records
      .filter((fields) => fields['id'])
      .map((fields) => ({
        id: fields['id']!,
        queues: fields['queues'] ? fields['queues'].split(',') : [],
        concurrency: Number(fields['concurrency']),
        startedAt: Number(fields['startedAt']),
        done: Number(fields['done']),
        held: Number(fields['held']),
        seenAt: Number(fields['seenAt']),
        ...(fields['clockOffsetMs'] ? { clockOffsetMs: Number(fields['clockOffsetMs']) } : {}),
      }))
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /**
   * Runs per segment of each queue, as one transaction (one round trip
   * unless some queue keeps runs of several TTL classes: see
   * `FinishedIndexes`): ready runs are counted from three keys a claim
   * changes together (a Redis out of memory answers them as a pipeline: see
   * `readTogether`), finished runs from every index of their segment.
   */
  async counts(queues: readonly string[]): Promise<QueueCounts[]> {
    const { replies, classes } = await this.finished.read(queues, (batch, q, known) => {
      batch
        .zcard(this.keys.ready(q))
        .llen(this.keys.readyList(q))
        .hget(this.keys.withdrawn(q), '')
        .zcard(this.keys.deferred(q))
        .zcard(this.keys.running(q))
        .zcard(this.keys.quarantined(q))
        .zcard(this.keys.cancelled(q))
        .get(this.keys.parked(q))
        .zcard(this.keys.flowWaiting(q));
      const successful = this.finished.indexKeys(q, 'successful', known);
      const failed = this.finished.indexKeys(q, 'failed', known);
      for (const key of successful) batch.llen(key);
      for (const key of failed) batch.zcard(key);
      return 9 + successful.length + failed.length;
    });
    return queues.map((queue, i) => {
      const [ready, listed, withdrawn, deferred, running, quarantined, cancelled, parked, waiting, ...indexes] =
        replies[i]!.map(Number);
      const successfulIndexes = this.finished.indexKeys(queue, 'successful', classes[i]!).length;
      return {
        queue,
        waiting: waiting!,
        // The ready list's dead places (runs dequeued from it) are not runs;
        // parked runs of limit groups are READY, in their groups' held sets.
        ready: ready! + listed! - withdrawn! + parked!,
        deferred: deferred!,
        running: running!,
        successful: sum(indexes.slice(0, successfulIndexes)),
        failed: sum(indexes.slice(successfulIndexes)),
        quarantined: quarantined!,
        cancelled: cancelled!,
      };
    });
  }

  /** A page of run ids of one segment, in the order it is served (finished ones newest first). */
  async list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    if (segment === 'ready') {
      const keys = this.scriptKeys.readyPage(queue);
      // Runs parked by their limit groups come after the rest.
      return readyPageWithParked(
        this.client,
        this.keys,
        queue,
        offset,
        limit,
        async () => (await runScript(this.client, 'readyPage', keys, [offset, limit])) as string[],
      );
    }
    if (segment === 'successful' || segment === 'failed') return this.finished.page(queue, segment, offset, limit);
    const key = this.keys.segment(queue, segment);
    const [start, end] = [String(offset), String(offset + limit - 1)];
    return NEWEST_FIRST[segment] ? this.client.zrevrange(key, start, end) : this.client.zrange(key, start, end);
  }

  /** The queues registered by every app that booted against this backend. */
  async knownQueues(): Promise<string[]> {
    return (await this.client.smembers(this.keys.queues)).sort();
  }

  /** A queue's lifetime counters. */
  async stats(queue: string): Promise<Record<string, number>> {
    const fields = await this.client.hgetall(this.keys.stats(queue));
    return Object.fromEntries(Object.entries(fields).map(([field, value]) => [field, Number(value)]));
  }

  /** The per-minute buckets of the last `minutes` minutes, oldest first, and the Redis clock. */
  async metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    const now = await this.serverNow();
    const current = Math.floor(now / 60_000);
    const pipeline = this.client.pipeline();
    for (let m = current - minutes + 1; m <= current; m++) pipeline.hgetall(this.keys.metrics(queue) + m);
    const replies = (await pipeline.exec()) ?? [];
    return {
      now,
      minutes: replies.map(([, fields], i) => {
        const f = fields as Record<string, string>;
        const n = (name: string) => Number(f[name] ?? 0);
        return {
          at: (current - minutes + 1 + i) * 60_000,
          enqueued: n('enqueued'),
          started: n('started'),
          waitMs: n('waitMs'),
          succeeded: n('succeeded'),
          failed: n('failed'),
          retried: n('retried'),
          quarantined: n('quarantined'),
          cancelled: n('cancelled'),
        };
      }),
    };
  }

  /** The leased runs of a queue with their deadlines. */
  async leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    const flat = await this.client.zrange(this.keys.running(queue), '0', '-1', 'WITHSCORES');
    const leases: { id: string; deadline: number }[] = [];
    for (let i = 0; i < flat.length; i += 2) leases.push({ id: flat[i]!, deadline: Number(flat[i + 1]) });
    return leases;
  }

  /** The Redis clock in ms: expiries and minute buckets are stamped with it, not with this host's. */
  private async serverNow(): Promise<number> {
    const [seconds, micros] = await this.client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }
}
