import type { StoredRateLimit, WorkerRecord } from '../../backend/task-backend.js';
import { moduleResultTtls, type ResultTtl, type ResultTtls } from '../../records/result-ttl.js';
import { inRateWindow, pastTtl, readyScore, roomUnder } from '../../rules/run-rules.js';
import { MemoryClock } from './memory-clock.js';
import { MemoryDedupeKeys } from './memory-dedupe.js';
import { MemoryFinishedLog } from './memory-finished-feed.js';
import { MemoryLimitGroups } from './memory-limit-groups.js';
import { MemoryQueue } from './memory-queue.js';
import type { MemoryRun } from './memory-run.js';
import type { MemoryRuns } from './memory-runs.js';
import { MemoryWakeups } from './memory-signals.js';

/** Settings the in-memory backend takes from the module options, as the Redis backend does. */
export interface MemoryBackendSettings {
  readonly leaseTtlMs: number;
  /** The default result TTL, of both outcomes or of each; a task may keep its runs for another. */
  readonly resultTtlMs: ResultTtl;
  readonly batchSize: number;
}

/** The wake-up topic of brokers (new deferred runs). */
export const BROKER_TOPIC = '\u0000broker';

/**
 * Everything the in-memory backend keeps: runs by id, queues by name,
 * workers, the feed of finished runs, the clock. One object, so the
 * operations (one file each concern) share it.
 */
export class MemoryState implements MemoryRuns {
  readonly runs = new Map<string, MemoryRun>();
  private readonly queueMap = new Map<string, MemoryQueue>();
  readonly known = new Set<string>();
  readonly workers = new Map<string, { record: WorkerRecord; expiresAt: number }>();
  readonly log = new MemoryFinishedLog();
  readonly wakeups = new MemoryWakeups();
  /** Paused queues, with when each was paused (the Redis backend's `q:<queue>:paused`). */
  readonly paused = new Map<string, number>();
  /** Concurrency caps by queue (the Redis backend's `q:<queue>:cap`). */
  readonly caps = new Map<string, number>();
  /** Rate limits by queue (the Redis backend's `q:<queue>:rate`). */
  readonly rateLimits = new Map<string, StoredRateLimit>();
  /** Per rate-limited queue, the claim times of the runs it leased (`q:<queue>:starts`). */
  private readonly rateLogs = new Map<string, number[]>();
  /** Task limits and their groups' rate logs (`task-limits` and the groups' keys in Redis). */
  readonly groups = new MemoryLimitGroups();
  /** Deduplication keys (`q:<queue>:dedupe:<key>` in Redis). */
  readonly dedupe = new MemoryDedupeKeys();
  /** Call ids: lease tokens are never granted twice. */
  private calls = 0;
  /** Ready sequence: FIFO within a priority, as `enqueue.lua` numbers runs. */
  private seq = 0;
  /** How long finished runs are kept per outcome, unless their task says otherwise. */
  readonly resultTtls: ResultTtls;

  constructor(
    readonly settings: MemoryBackendSettings,
    readonly clock = new MemoryClock(),
  ) {
    this.resultTtls = moduleResultTtls(settings.resultTtlMs);
  }

  queue(name: string): MemoryQueue {
    let queue = this.queueMap.get(name);
    if (!queue) this.queueMap.set(name, (queue = new MemoryQueue(name)));
    return queue;
  }

  /** Every queue that ever held a run or was registered. */
  queueNames(): string[] {
    return [...new Set([...this.queueMap.keys(), ...this.known])].sort();
  }

  /** A queue's rate log, its entries older than the limit's window dropped (as `claim.lua` does). */
  rateLog(queue: string, now = this.clock.now()): number[] {
    const limit = this.rateLimits.get(queue);
    let log = this.rateLogs.get(queue);
    if (!log) this.rateLogs.set(queue, (log = []));
    if (limit) {
      const window = limit.perMs + limit.startSlackMs;
      while (log.length > 0 && !inRateWindow(log[0]!, now, window)) log.shift();
    }
    return log;
  }

  /** How many more runs a claim may lease of `queue` now, under its cap and its rate limit. */
  room(queue: string, now: number): number {
    const limits = { concurrency: this.caps.get(queue), max: this.rateLimits.get(queue)?.max };
    return roomUnder(limits, this.queue(queue).running.size, this.rateLog(queue, now).length);
  }

  /** How many more runs a claim may lease of `queue` under its rate limit now. */
  private rateRoom(queue: string, now: number): number {
    return roomUnder({ max: this.rateLimits.get(queue)?.max }, 0, this.rateLog(queue, now).length);
  }

  /** An idle wait on `queues`, shortened to end when a rate-limited one holding back ready runs frees a place. */
  rateWait(queues: readonly string[], timeoutMs: number): number {
    let wait = timeoutMs;
    const now = this.clock.now();
    for (const queue of queues) {
      const limit = this.rateLimits.get(queue);
      if (!limit || this.rateRoom(queue, now) > 0 || this.queue(queue).ready.size === 0) continue;
      wait = Math.min(wait, Math.max(1, this.rateLog(queue, now)[0]! + limit.perMs + limit.startSlackMs - now + 1));
    }
    return wait;
  }

  nextCall(): string {
    return `call-${++this.calls}`;
  }

  /** The ready score of a new run: its place in ready order (`readyScore`). */
  nextScore(priority: number): number {
    return readyScore(priority, ++this.seq);
  }

  /** Removes a run from its queue and from the store. */
  delete(run: MemoryRun): void {
    this.queue(run.queue).remove(run.id);
    this.runs.delete(run.id);
  }

  /**
   * Removes finished runs of `queues` whose result TTL (each its own: see
   * `MemoryQueue.keptFor`) passed; returns how many, and when the next one's passes.
   */
  trim(queues: readonly string[], now: number): { removed: number; nextExpiryAt: number | null } {
    let removed = 0;
    let next: number | null = null;
    for (const name of queues) {
      const queue = this.queue(name);
      for (const segment of [queue.successful, queue.failed, queue.cancelled]) {
        for (const [id, finishedAt] of segment) {
          const ttl = queue.keptFor.get(id)!;
          if (pastTtl(finishedAt, ttl, now)) {
            const run = this.runs.get(id);
            if (run) this.delete(run);
            segment.delete(id);
            removed++;
          } else if (next === null || finishedAt + ttl < next) {
            next = finishedAt + ttl;
          }
        }
      }
    }
    return { removed, nextExpiryAt: next };
  }
}
