import { REQUEUEABLE_SEGMENTS, SEGMENTS } from '../records/backend-records.js';
import type { AdminStore } from '../backend/backend-roles.js';
import type { ScheduleInfo } from '../records/schedule-options.interface.js';
import { scheduleInfo } from '../schedule/schedule-info.js';
import { moduleResultTtls } from '../records/result-ttl.js';
import { Inject, Injectable } from '@nestjs/common';
import {
  TaskBackend,
  type MinuteMetrics,
  type QueueCounts,
  type Segment,
  type WorkerRecord,
  type PurgeOptions,
  type RequeueableSegment,
  type RequeueAllOptions,
} from '../backend/task-backend.js';
import { projectCapacity } from '../capacity/capacity-projection.js';
import { RATE_MINUTES, type CapacityReport } from '../capacity/capacity-report.js';
import { InvalidInspectionError } from '../errors/invalid-inspection.error.js';
import { checkChunkOptions } from './chunk-options.js';
import { InvalidRunStateError } from '../errors/invalid-run-state.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import type { TaskResult } from '../records/task-result.js';
import { taskResultFromStored } from '../codec/task-result.factory.js';
import { THREADMILL_OPTIONS } from '../threadmill.constants.js';
import { storedRateLimit, type RateLimit } from '../limits/rate-limit.js';
import { checkedTaskLimit, type TaskLimitSettings } from '../limits/task-limit.js';
import type { StoredTaskLimit } from '../backend/task-backend.js';
import type {
  ConcurrencyCapState,
  RateLimitState,
  TaskLimitState,
  LeaseInfo,
  PauseState,
  QueueOverview,
  WorkerInfo,
} from './inspector.types.js';
import { cancelRun, type CancelOutcome } from '../queue/cancel-run.js';
import type { PartitionView } from '../backend/partitioned/partition-record.js';
import { assembleFlowView, type FlowView } from './flow-view.js';

/** A page of a segment listing. */
export interface ListOptions {
  /** @defaultValue `0` */
  offset?: number;
  /** At most {@link MAX_PAGE}. @defaultValue `100` */
  limit?: number;
}

/** The most runs one page lists: a listing reads every record it returns. */
export const MAX_PAGE = 1_000;

/** The segments of a queue (re-exported: they were first exported from here). */
export { REQUEUEABLE_SEGMENTS, SEGMENTS };

/** The segments {@link TaskInspector.requeueAll} requeues. */

/**
 * The telemetry and operations API of a backend, for dashboards, terminal
 * inspectors and admin endpoints: queues with counts and rates, runs by
 * segment, flows with their nodes' statuses, live workers and their leases, and the actions requeue (of a run or
 * of a segment), dequeue, cancel, purge, pause and resume (each one atomic script; a purge one per chunk). It reads what the hot path records
 * anyway (counters and per-minute buckets written once per script call), so
 * watching a busy queue does not slow it down.
 */
@Injectable()
export class TaskInspector {
  constructor(
    @Inject(TaskBackend) private readonly backend: AdminStore,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
  ) {}

  /** The backend's alias (its keyspace). */
  get alias(): string {
    return this.options.alias;
  }

  /** Every queue of the backend: this application's and those other applications registered. */
  async queues(): Promise<string[]> {
    const known = await this.backend.knownQueues();
    return [...new Set([...this.options.queues, ...known])].sort();
  }

  /** Runs per segment of each queue. */
  async counts(queues?: readonly string[]): Promise<QueueCounts[]> {
    return this.backend.counts(queues ?? (await this.queues()));
  }

  /**
   * Every queue at a glance: counts, ingress and egress per second over the
   * last `windowMinutes`, the age of its oldest ready run and its totals.
   */
  async overview(windowMinutes = 5): Promise<QueueOverview[]> {
    const queues = await this.queues();
    const [counts, paused, caps, limits] = await Promise.all([
      this.backend.counts(queues),
      this.backend.pausedSince(queues),
      this.backend.concurrencyCaps(queues),
      this.backend.rateLimits(queues),
    ]);
    return Promise.all(
      counts.map(async (count, i) => {
        const [{ now, minutes }, { since }, totals] = await Promise.all([
          this.backend.metrics(count.queue, windowMinutes),
          this.backend.readySince(count.queue),
          this.backend.stats(count.queue),
        ]);
        // The window ends now: the current minute counts only as far as it went
        // (at least a second, so a one-minute window just past the minute stays finite).
        const seconds = Math.max((windowMinutes - 1) * 60 + (now % 60_000) / 1000, 1);
        const sum = (pick: (m: MinuteMetrics) => number) => minutes.reduce((total, m) => total + pick(m), 0);
        return {
          ...count,
          ingressPerSecond: sum((m) => m.enqueued) / seconds,
          egressPerSecond: sum((m) => m.succeeded + m.failed) / seconds,
          oldestReadyAgeMs: since === null ? null : Math.max(0, now - since),
          totals,
          paused: paused[i] !== null,
          pausedAt: paused[i] ?? null,
          concurrencyCap: caps[i] ?? null,
          rateLimit: limits[i] ?? null,
        };
      }),
    );
  }

  /** A queue's activity per minute over the last `minutes` (at most 120), oldest first. */
  async metrics(queue: string, minutes = 60): Promise<MinuteMetrics[]> {
    this.check(queue);
    return (await this.backend.metrics(queue, Math.min(Math.max(minutes, 1), 120))).minutes;
  }

  /**
   * The runs of one segment of a queue, a page at a time: ready runs in the
   * order they will run, deferred by due time, running by lease deadline,
   * finished and quarantined runs newest first.
   */
  async list(queue: string, segment: Segment, { offset = 0, limit = 100 }: ListOptions = {}): Promise<TaskResult[]> {
    this.check(queue);
    if (!SEGMENTS.includes(segment)) {
      throw new InvalidInspectionError(`segment must be one of ${SEGMENTS.join(', ')}, got "${String(segment)}".`);
    }
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new InvalidInspectionError(`offset must be an integer of 0 or more, got ${String(offset)}.`);
    }
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new InvalidInspectionError(`limit must be an integer from 1 to ${MAX_PAGE}, got ${String(limit)}.`);
    }
    const ids = await this.backend.list(queue, segment, offset, limit);
    const records = await this.backend.loadMany(ids);
    // A finished run may expire between the two reads: skip it.
    return records.flatMap((fields, i) => (fields ? [taskResultFromStored(ids[i]!, fields)] : []));
  }

  /** Quarantined runs of a queue, newest first. */
  quarantined(queue: string, page?: ListOptions): Promise<TaskResult[]> {
    return this.list(queue, 'quarantined', page);
  }

  /**
   * A run's full record.
   * @throws TaskResultNotFoundError for an unknown id
   */
  async get(id: string): Promise<TaskResult> {
    const fields = await this.backend.load(id);
    if (!fields) throw new TaskResultNotFoundError(id);
    return taskResultFromStored(id, fields);
  }

  /**
   * A flow (`docs/flows.md`) with its nodes' live statuses, every node after
   * its dependencies (by depth, then id): one read of the flow's record and
   * one `loadMany` of its nodes' runs. A node whose run record is gone
   * (trimmed) shows the outcome the flow recorded for it.
   * @returns null when no flow has this id (or it ended and expired)
   * @throws InvalidInspectionError for an id that cannot be one (not 1-200 characters)
   */
  async flow(id: string): Promise<FlowView | null> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 200) {
      throw new InvalidInspectionError(`"${String(id).slice(0, 40)}" is not a flow id (1-200 characters).`);
    }
    const flow = await this.backend.flows.load(id);
    if (!flow) return null;
    return assembleFlowView(flow, await this.backend.loadMany(flow.nodes.map((node) => node.id)));
  }

  /**
   * Redis's memory, its limit, and the memory the results kept will take at
   * the current finish rate (see {@link CapacityReport}), with a warning
   * when either reaches `memoryWarningRatio` of `maxmemory`. Reads one
   * `INFO memory`, the counts and the last two minutes' buckets of every
   * queue of the backend (memory is shared by all of them).
   */
  async capacity(): Promise<CapacityReport> {
    const queues = await this.queues();
    const [memory, counts, windows] = await Promise.all([
      this.backend.memory(),
      this.backend.counts(queues),
      Promise.all(queues.map((queue) => this.backend.metrics(queue, RATE_MINUTES))),
    ]);
    const { resultTtlMs, memoryWarningRatio } = this.options;
    return projectCapacity({
      memory,
      counts,
      windows,
      // The module's TTLs: runs of a task with its own are projected at their outcome's.
      resultTtlMs: moduleResultTtls(resultTtlMs),
      warningRatio: memoryWarningRatio,
    });
  }

  /**
   * Live worker processes as they last reported (heartbeats), without their
   * leases: cheap enough for health checks and metrics scrapes.
   */
  liveWorkers(): Promise<WorkerRecord[]> {
    return this.backend.workers();
  }

  /**
   * Redis's time now, as this process estimates it from Redis's replies
   * (epoch ms): what inspectors show times against, so that "seen 2 s ago"
   * is right on a host whose clock is off. This host's clock before Redis
   * first answered.
   */
  now(): number {
    return Date.now() - (this.backend.clockOffsetMs() ?? 0);
  }

  /**
   * One round trip to Redis, in ms.
   * @throws RedisUnavailableError when Redis does not answer
   */
  ping(): Promise<number> {
    return this.backend.ping();
  }

  /**
   * The partitions of a partitioned backend (docs/scale-out.md): this
   * process's count, the span workers consume, and the other counts
   * processes recorded within the last minute (a mismatch when any); null
   * for a backend of one partition.
   */
  partitions(): PartitionView | null {
    return this.backend.partitionView();
  }

  /** Every schedule of the backend (`docs/schedules.md`), with its next and last run, by id. */
  async schedules(): Promise<ScheduleInfo[]> {
    return (await this.backend.schedules.list()).map(scheduleInfo);
  }

  /** Live worker processes, each with the leases it holds (task and deadline). */
  async workers(): Promise<WorkerInfo[]> {
    const [records, queues] = await Promise.all([this.backend.workers(), this.queues()]);
    const leases = new Map<string, LeaseInfo[]>();
    for (const queue of queues) {
      const held = await this.backend.leases(queue);
      const stored = await this.backend.loadMany(held.map((lease) => lease.id));
      stored.forEach((fields, i) => {
        if (!fields) return;
        const run = taskResultFromStored(held[i]!.id, fields);
        const holder = run.workerIds.at(-1);
        if (!holder) return;
        const list = leases.get(holder) ?? [];
        list.push({ id: run.id, queue, taskName: run.taskName, deadline: new Date(held[i]!.deadline) });
        leases.set(holder, list);
      });
    }
    return records.map((record) => ({ ...record, leases: leases.get(record.id) ?? [] }));
  }

  /**
   * Sends a FAILED, QUARANTINED or CANCELLED run back to READY, keeping its id, attempt
   * count and error history, at its original place in its queue.
   * @returns the run as stored just after the requeue (a worker may already have claimed it)
   * @throws TaskResultNotFoundError for an unknown id
   * @throws InvalidRunStateError when the run is not FAILED, QUARANTINED or CANCELLED
   */
  async requeue(id: string): Promise<TaskResult> {
    const run = await this.get(id);
    const { requeued, status } = await this.backend.requeue(id, run.queue);
    if (!requeued) {
      if (status === '') throw new TaskResultNotFoundError(id);
      throw new InvalidRunStateError(id, 'requeue', status, 'FAILED, QUARANTINED or CANCELLED');
    }
    return this.get(id);
  }

  /**
   * Requeues every run `segment` of `queue` holds when this begins, each as
   * {@link requeue} does, in bounded chunks (one script call each, a few
   * milliseconds of Redis time however large the segment), so that Redis
   * keeps serving everyone meanwhile. Runs that enter the segment after it
   * began stay there; runs requeued, trimmed or purged meanwhile are skipped.
   * A requeue stopped half way leaves every run either requeued or where it
   * was: call it again for the rest.
   * @param segment `failed`, `quarantined` or `cancelled`
   * @param options `onProgress` is called after each chunk with the runs requeued so far
   * @returns the number of runs requeued
   * @throws InvalidInspectionError for a bad queue name, segment or option
   */
  async requeueAll(queue: string, segment: RequeueableSegment, options?: RequeueAllOptions): Promise<number> {
    this.check(queue);
    if (!REQUEUEABLE_SEGMENTS.includes(segment)) {
      throw new InvalidInspectionError(
        `requeueAll takes segment ${REQUEUEABLE_SEGMENTS.join(', ')}, got "${String(segment)}".`,
      );
    }
    if (options !== undefined) checkChunkOptions('requeueAll', options);
    return this.backend.requeueAll(queue, segment, options);
  }

  /**
   * Cancels a pending or running run, as `TaskQueue.cancel` does: it ends
   * CANCELLED at once (a running attempt's signal aborts with `CancelledError`
   * at its worker's next renewal); a CANCELLED run answers `cancelled: false`.
   * @throws TaskResultNotFoundError for an unknown id
   * @throws InvalidRunStateError when the run finished otherwise (SUCCESSFUL, FAILED, QUARANTINED)
   */
  cancel(id: string): Promise<CancelOutcome> {
    return cancelRun(this.backend, id);
  }

  /**
   * Removes a pending (READY or deferred) run and its record, or a flow node
   * WAITING for its dependencies (it counts as CANCELLED for its flow, whose
   * dependents of it are settled by their edges' policies).
   * @throws TaskResultNotFoundError for an unknown id
   * @throws InvalidRunStateError when the run is not pending (a leased run belongs to its worker)
   */
  async dequeue(id: string): Promise<void> {
    const run = await this.get(id);
    const { removed, status } = await this.backend.dequeue(id, run.queue);
    if (removed) return;
    if (status === '') throw new TaskResultNotFoundError(id);
    throw new InvalidRunStateError(id, 'dequeue', status, 'READY (or deferred) or WAITING (a flow node)');
  }

  /**
   * Removes every run `queue` holds when the purge begins, in every segment,
   * with its record, in bounded chunks (one script call each, a few
   * milliseconds of Redis time however large the queue), so that Redis keeps
   * serving everyone meanwhile. Runs enqueued after it began stay, and so
   * does a run a worker claims meanwhile (its lease is not taken from under
   * it); runs leased when it began are removed (their acknowledgements are
   * discarded as stale). Counters and metrics stay. A purge stopped half way
   * leaves a consistent queue: purge again to remove the rest.
   * @param options `onProgress` is called after each chunk with the runs removed so far
   * @returns the number of runs removed
   */
  async purge(queue: string, options?: PurgeOptions): Promise<number> {
    this.check(queue);
    if (options !== undefined) checkChunkOptions('purge', options);
    return this.backend.purge(queue, options);
  }

  /**
   * Pauses `queue` for every worker of every pool, until {@link resume}: no
   * claim takes its runs. Enqueues are accepted; runs already leased
   * (RUNNING, a worker's prefetched ones included) run and are acknowledged
   * as usual; deferred runs that come due wait READY. The flag is stored in
   * Redis, so it holds across worker restarts and deploys. A queue no
   * application registered yet may be paused (to pause it before the
   * workers that serve it are deployed): it is registered, so the overview
   * lists it as paused. Idempotent.
   */
  async pause(queue: string): Promise<PauseState> {
    this.check(queue);
    const { pausedAt, changed } = await this.backend.pause(queue);
    return { queue, paused: true, pausedAt, changed };
  }

  /**
   * Resumes a paused `queue`: its ready runs are claimed again, and idle
   * workers are woken at once. Idempotent.
   */
  async resume(queue: string): Promise<PauseState> {
    this.check(queue);
    const { changed } = await this.backend.resume(queue);
    return { queue, paused: false, pausedAt: null, changed };
  }

  /** Whether `queue` is paused, and since when. */
  async pauseState(queue: string): Promise<Omit<PauseState, 'changed'>> {
    this.check(queue);
    const [pausedAt] = await this.backend.pausedSince([queue]);
    return { queue, paused: pausedAt !== null, pausedAt: pausedAt ?? null };
  }

  /**
   * Sets (a positive integer) or removes (`null`) the concurrency cap of
   * `queue`: at most `cap` of its runs are leased at once across every worker
   * of every pool. The cap is stored in Redis and read by every claim, so it
   * applies from the next claim on and holds across restarts and deploys.
   * Leases count until they end (acknowledged, handed back, or expired and
   * reaped), so a process that dies keeps its runs counted until the reaper
   * recovers them: the cap is never exceeded. Lowering it below the runs
   * leased now takes no lease away. Idempotent.
   */
  async setConcurrencyCap(queue: string, cap: number | null): Promise<ConcurrencyCapState> {
    this.check(queue);
    if (cap !== null && (!Number.isSafeInteger(cap) || cap < 1)) {
      throw new InvalidInspectionError(
        `The concurrency cap of queue "${queue}" must be a positive integer or null (no cap), not ${String(cap)}: ` +
          'pass the most runs of the queue that may be leased at once, or null to remove the cap.',
      );
    }
    const { previous } = await this.backend.setConcurrencyCap(queue, cap);
    return { queue, cap, previous };
  }

  /**
   * Sets or removes (`null`) the rate limit of `queue`: at most `max` of its
   * runs start in any window of `perMs`, across every worker of every pool.
   * Stored in Redis and read by every claim, so it applies from the next
   * claim on. Runs held back stay READY, uncharged, at their place; other
   * queues are not held back. An application's `rateLimits` option writes
   * its limits again when it boots. Idempotent.
   */
  async setRateLimit(queue: string, limit: RateLimit | null): Promise<RateLimitState> {
    this.check(queue);
    const stored = limit === null ? null : storedRateLimit(queue, limit);
    const { previous } = await this.backend.setRateLimit(queue, stored);
    return { queue, limit: stored, previous };
  }

  /** The rate limit of `queue`, or null when it has none. */
  async rateLimit(queue: string): Promise<Required<RateLimit> | null> {
    this.check(queue);
    const [limit] = await this.backend.rateLimits([queue]);
    return limit ?? null;
  }

  /**
   * Sets or removes (`null`) the limit of task `task` (its rate, its
   * concurrency, or both), per limit group: the task, or each key its code's
   * `limit.key` computes. Stored in Redis and read by every claim, so it
   * applies from the next claim on, to runs already enqueued too; the groups'
   * rate logs and leases are kept, so it counts the runs already started.
   * Runs of a task whose code declares no limit are not held back by one set
   * here. An application that registers the task writes its code's limit
   * again when it boots. Idempotent.
   */
  async setTaskLimit(task: string, limit: TaskLimitSettings | null): Promise<TaskLimitState> {
    this.checkTask(task);
    const stored = limit === null ? null : checkedTaskLimit(task, limit);
    const { previous } = await this.backend.setTaskLimit(task, stored);
    return { task, limit: stored, previous };
  }

  /** The limit of task `task`, or null when it has none. */
  async taskLimit(task: string): Promise<StoredTaskLimit | null> {
    this.checkTask(task);
    const [limit] = await this.backend.taskLimits([task]);
    return limit ?? null;
  }

  /** The concurrency cap of `queue`, or null when it has none. */
  async concurrencyCap(queue: string): Promise<number | null> {
    this.check(queue);
    const [cap] = await this.backend.concurrencyCaps([queue]);
    return cap ?? null;
  }

  private checkTask(task: string): void {
    if (typeof task !== 'string' || task.length === 0 || task.length > 200 || task.includes('\n')) {
      throw new InvalidInspectionError(`"${String(task)}" is not a task name (1-200 characters, no newline).`);
    }
  }

  private check(queue: string): void {
    if (typeof queue !== 'string' || !NAME_PATTERN.test(queue)) {
      throw new InvalidInspectionError(
        `"${String(queue)}" is not a queue name (1-64 characters of letters, digits, "_", "." or "-").`,
      );
    }
  }
}
