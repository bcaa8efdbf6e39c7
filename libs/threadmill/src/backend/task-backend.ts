import { newRunId } from '../codec/run-id.js';
import type { ScheduleStore } from './schedule-store.js';
import type { FlowStore } from './flow-store.js';
import type { WatchReply } from './waiting/finished-feed.js';
import type { Waiter } from './waiting/waiter.js';

export type { FinishedEntry, FinishedFeed, WatchReply } from './waiting/finished-feed.js';
import type { PartitionView } from './partitioned/partition-record.js';
import type { ClaimedRuns } from './claim-rotation.js';
import type {
  NewRun,
  StoreOutcome,
  StoredRateLimit,
  StoredTaskLimit,
  LeasedRun,
  Acknowledgement,
  Segment,
  LeaseRef,
  RunReport,
  RenewedLease,
  LeaseRenewal,
  WorkerHeartbeat,
  WorkerRecord,
  MinuteMetrics,
  QueueCounts,
  MemoryUsage,
  StoredRun,
  PurgeOptions,
  RequeueableSegment,
  RequeueAllOptions,
} from '../records/backend-records.js';

// Importers of the contract find its records here too.
export type * from '../records/backend-records.js';
export type { ClaimedRuns } from './claim-rotation.js';

/**
 * Blocks until something happens: for a broker, a new deferred run or a
 * first lease that changes its plan. Each waiter owns one, because a blocked
 * command holds its connection.
 */
export interface WorkSignal {
  /** Resolves true when woken, false on timeout or close. */
  wait(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * An idle consumer's claim: it waits until one of the consumer's queues may
 * have ready runs, and claims the moment the wait ends. Each consumer owns
 * one, because a blocked command holds its connection.
 */
export interface ClaimWaiter {
  /**
   * Waits up to `timeoutMs` for ready runs, then claims up to `count` of
   * them, starting the rotation at `offset` (the previous claim's
   * {@link ClaimedRuns.next}): whatever ended the wait (new runs, the
   * timeout, {@link interrupt}), the claim runs, and its runs come back
   * (none when there were none), with where its rotation stopped.
   */
  claim(count: number, offset: number, timeoutMs: number): Promise<ClaimedRuns>;
  /** Ends a wait under way now; its claim still runs and returns. */
  interrupt(): Promise<void>;
  close(): Promise<void>;
}
/**
 * Storage of task runs. Everything Threadmill persists goes through here;
 * nothing outside `backend/` builds a Redis key or calls a script.
 */
export abstract class TaskBackend {
  /** The schedules of this backend (`docs/schedules.md`). */
  abstract readonly schedules: ScheduleStore;
  /** The flows of this backend (`docs/flows.md`). */
  abstract readonly flows: FlowStore;
  /**
   * A new id for a run Threadmill names: a ULID. A partitioned backend names
   * the run's partition in it (see `docs/scale-out.md`).
   * @param _key routes the run (its `partitionKey`, or its dedupe key): runs of one key go to one partition
   */
  newRunId(_key?: string): string {
    return newRunId();
  }
  /** A new run id stored where run `id` is (a partitioned backend: in its partition). */
  newRunIdBeside(_id: string): string {
    return newRunId();
  }
  /**
   * How far this process's wall clock runs ahead of the store's (ms;
   * negative: behind), as estimated from its replies; undefined before the
   * first. Shown to operators (worker records, metrics): no decision reads it
   * (`docs/guarantees.md#clocks`).
   */
  clockOffsetMs(): number | undefined {
    return undefined;
  }
  /** Stores runs atomically; runs whose id exists are left untouched. */
  abstract store(runs: readonly NewRun[]): Promise<StoreOutcome>;
  /**
   * Checks the stored layout and brings an older one up to this version's;
   * run once before anything else.
   * @throws StorageLayoutError when a newer version of Threadmill wrote the keys
   */
  abstract prepare(): Promise<void>;
  /**
   * Leases up to `count` ready runs across `queues`, fairly, starting the
   * rotation at `offset`: the queues are served in turn from there, each a
   * share of at least `CLAIM_MIN_SHARE` runs (an equal share when fewer
   * queues have runs), and the reply says where the rotation stopped
   * ({@link ClaimedRuns.next}). A consumer passes that as the offset of its
   * next claim of the same queues, so every queue with ready runs is served
   * within a bounded number of its claims (`docs/storage.md`, "Fairness").
   * A leased run has not started: an expiry of its lease hands it back to
   * READY uncharged until its start is recorded (see {@link acknowledge}
   * and {@link announceStart}).
   */
  abstract claim(queues: readonly string[], count: number, workerId: string, offset: number): Promise<ClaimedRuns>;
  /** The blocking claim of an idle consumer of `queues` (see {@link ClaimWaiter}). */
  abstract claimWaiter(queues: readonly string[], workerId: string): ClaimWaiter;
  /**
   * Applies outcomes, and records that the attempts of `started` began (an
   * expiry of their leases then charges them); returns per outcome whether
   * it applied (false: stale lease, discarded). The same `acks` array passed
   * again, after a call that failed, is the same call: if Redis ran its
   * first copy, the answer is that copy's (what it applied is not reported
   * stale).
   *
   * A backend of one keyspace makes one call and throws when it fails. A
   * backend of several partitions makes one call per partition: an outcome
   * whose partition did not answer is `undefined` (whether it applied is not
   * known), and the others' answers stand; the same `acks` passed again
   * calls only the partitions that have not answered, as the same calls.
   */
  abstract acknowledge(
    acks: readonly Acknowledgement[],
    started?: readonly LeaseRef[],
  ): Promise<(boolean | undefined)[]>;
  /**
   * Announces that a suspect is about to start, before it starts: a further
   * lease expiry is counted against it (its recoveries), without charging
   * an attempt, since a kill may land before its handler's first line; its
   * start is recorded by a start mark (see {@link acknowledge}). Returns
   * false when its lease no longer holds (it must not start).
   */
  abstract announceStart(run: LeaseRef): Promise<boolean>;
  /**
   * Stores what running attempts reported: each run's latest progress JSON,
   * and its log lines appended to those it keeps (the last
   * `MAX_LOG_LINES`). Fenced by each lease; returns per report whether
   * it was stored (false: the lease no longer holds, nothing was written).
   * Registered runs' waiters get an entry in the {@link finishedFeed}.
   */
  abstract report(reports: readonly RunReport[]): Promise<boolean[]>;
  /** Hands leased, never-started runs back to READY; returns per item whether it was released. */
  abstract release(leases: readonly LeaseRef[]): Promise<boolean[]>;
  /**
   * Ends leased runs' attempts without charging them (`context.retryAfter`):
   * each becomes a deferred run due `delayMs` from now, its `attempts` and
   * errors unchanged, no retry counted. Fenced by the lease; returns per item
   * whether it was deferred.
   */
  abstract defer(leases: readonly (LeaseRef & { readonly delayMs: number })[]): Promise<boolean[]>;
  /**
   * Refreshes a worker's record (heartbeat) and extends its leases, in one
   * call; returns per lease whether it is still held, and whether its queue
   * is paused (its worker hands back what it holds there unstarted).
   *
   * A backend of one keyspace makes one call and throws when it fails. A
   * backend of several partitions makes one call per partition: a partition
   * whose call fails, or has not answered within `answerWithinMs`, answers
   * `unanswered` for its leases, and the others' answers stand; it throws only
   * when every call failed.
   * @param recordTtlMs how long the record lives without another heartbeat
   * @param answerWithinMs how long the caller waits for a partition's answer
   *   before it counts it `unanswered` (its next renewal is due then); none:
   *   as long as the call takes
   */
  abstract renew(
    worker: WorkerHeartbeat,
    recordTtlMs: number,
    leases: readonly LeaseRenewal[],
    answerWithinMs?: number,
  ): Promise<RenewedLease[]>;
  /** Removes a stopping worker's record. */
  abstract retire(workerId: string): Promise<void>;
  /** Live workers, by id. */
  abstract workers(): Promise<WorkerRecord[]>;
  /** One round trip to Redis; resolves with its duration in ms. */
  abstract ping(): Promise<number>;
  /**
   * Moves due deferred runs to READY; returns the count, the next due time
   * (epoch ms) or null, and the Redis time of the call.
   */
  abstract promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }>;
  /**
   * Settles runs whose lease expired: those whose attempt never started go
   * back to READY uncharged (`returned` counts them); those whose attempt
   * started are claimed for `claimTtlMs`, for the broker to settle through
   * their retry policy. An announced attempt (see {@link announceStart})
   * counts a recovery and goes back uncharged, until its run's recoveries
   * reach `maxRecoveries`: then it is claimed too (the broker quarantines
   * it). Also returns the earliest lease deadline still pending (epoch ms)
   * or null.
   */
  abstract reap(
    queues: readonly string[],
    claimTtlMs: number,
    maxRecoveries: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }>;
  /**
   * Removes finished runs whose result TTL passed, with their index entries;
   * returns how many, and when the next one's TTL passes (epoch ms) or null.
   */
  abstract trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }>;
  /** The stored fields of a run, or null when no run has this id. */
  abstract load(id: string): Promise<StoredRun | null>;
  /** The stored fields of many runs (null for each unknown id), in one round trip. */
  abstract loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]>;
  /** Counts per segment of each queue. */
  abstract counts(queues: readonly string[]): Promise<QueueCounts[]>;
  /**
   * Run ids of a segment in order: pending segments in the order they will be
   * served, finished ones newest first.
   */
  abstract list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]>;
  /**
   * Sends a FAILED, QUARANTINED or CANCELLED run back to READY; returns the status it
   * had, or null (with its current status) when it is neither.
   */
  abstract requeue(id: string, queue: string): Promise<{ requeued: boolean; status: string }>;
  /**
   * Requeues, as {@link requeue} does each, the runs a queue's segment holds
   * when this begins, in bounded chunks (no call blocks the store for long);
   * runs that enter it after it began stay, runs that left it meanwhile are
   * skipped. Returns how many it requeued.
   */
  abstract requeueAll(queue: string, segment: RequeueableSegment, options?: RequeueAllOptions): Promise<number>;
  /** Records queue names for inspectors (idempotent). */
  abstract registerQueues(queues: readonly string[]): Promise<void>;
  /** Queue names registered by any application of this backend. */
  abstract knownQueues(): Promise<string[]>;
  /** Cumulative counters of a queue (enqueued, succeeded, failed, retried, quarantined, staleAcks, ...). */
  abstract stats(queue: string): Promise<Record<string, number>>;
  /** A queue's per-minute metrics, oldest first, for the `minutes` up to now. */
  abstract metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }>;
  /** When the longest-waiting ready run of a queue became ready (epoch ms), or null; with the Redis time. */
  abstract readySince(queue: string): Promise<{ now: number; since: number | null }>;
  /**
   * Finishes a pending (READY or deferred) or RUNNING run of `queue` CANCELLED:
   * a pending run leaves its segment; a running run's lease is revoked, so
   * its holder's renewal answers `cancelled` and its outcome is discarded.
   * Returns whether this call cancelled it and the status it had (READY or
   * RUNNING); a run already CANCELLED answers `cancelled: false, status:
   * 'CANCELLED'`, any other its status ('' when the queue has no such run),
   * with nothing changed. A resent copy answers as its first did.
   */
  abstract cancel(id: string, queue: string): Promise<{ cancelled: boolean; status: string }>;
  /**
   * Removes a READY (or deferred) run, or a WAITING flow node, and its record (a flow node counts as
   * CANCELLED for its flow); returns the status it had and whether it was removed.
   */
  abstract dequeue(id: string, queue: string): Promise<{ removed: boolean; status: string }>;
  /** The leases on a queue's runs: run id and deadline (epoch ms), earliest deadline first. */
  abstract leases(queue: string): Promise<{ id: string; deadline: number }[]>;
  /**
   * The memory of the store: in use, its limit, what the data takes. One
   * cheap read (an `INFO memory`), for the capacity guard and observers.
   */
  abstract memory(): Promise<MemoryUsage>;
  /**
   * Removes every run a queue holds when the purge begins, with its record,
   * in bounded chunks (no call blocks the store for long); runs enqueued or
   * leased after it began stay. Returns how many it removed.
   */
  abstract purge(queue: string, options?: PurgeOptions): Promise<number>;
  /**
   * Pauses a queue, for every worker of every pool: no claim takes its runs
   * until {@link resume}; enqueues, leased runs and their acknowledgements go
   * on as usual, and deferred runs that come due wait READY. Idempotent; a
   * queue no application registered may be paused (and is registered).
   * @returns when the queue was paused (epoch ms, Redis clock), and whether this call paused it
   */
  abstract pause(queue: string): Promise<{ pausedAt: number; changed: boolean }>;
  /**
   * Resumes a paused queue and wakes its idle consumers. Idempotent.
   * @returns whether the queue was paused
   */
  abstract resume(queue: string): Promise<{ changed: boolean }>;
  /** Per queue, in order: when it was paused (epoch ms), or null when it is not paused. */
  abstract pausedSince(queues: readonly string[]): Promise<(number | null)[]>;
  /**
   * Sets (a positive integer) or removes (`null`) a queue's concurrency cap,
   * for every worker of every pool: claims lease a run of the queue only while
   * fewer than `cap` of its runs are leased. Idempotent; a queue no
   * application registered may be capped (and is registered).
   * @returns the cap before the call, or null when there was none
   */
  abstract setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }>;
  /** Per queue, in order: its concurrency cap, or null when it has none. */
  abstract concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]>;
  /**
   * Sets or removes (`null`) a queue's rate limit, for every worker of every
   * pool: claims lease at most `max` of its runs in any window of
   * `perMs + startSlackMs`, and each must start within `startSlackMs` of its
   * claim. Idempotent; a queue no application registered may be limited (and
   * is registered).
   * @returns the limit before the call, or null when there was none
   */
  abstract setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }>;
  /** Per queue, in order: its rate limit, or null when it has none. */
  abstract rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]>;
  /**
   * Sets or removes (`null`) a task's limit, for every worker of every pool:
   * claims lease a run of one of its limit groups only while the group has
   * room under it. Runs held back stay READY, uncharged. Idempotent.
   * @returns the limit before the call, or null when there was none
   */
  abstract setTaskLimit(task: string, limit: StoredTaskLimit | null): Promise<{ previous: StoredTaskLimit | null }>;
  /** Per task, in order: its limit, or null when it has none. */
  abstract taskLimits(tasks: readonly string[]): Promise<(StoredTaskLimit | null)[]>;
  /** A blocking wake-up source for a broker: new deferred runs. */
  abstract brokerSignal(): WorkSignal;
  /**
   * Registers runs somebody waits on for `expiryMs` (renewed by calling
   * again) and reads their state in the same step: a run pending here gets
   * an entry in the {@link finishedFeed} after `lastId` when it settles or
   * is removed.
   */
  abstract watch(ids: readonly string[], expiryMs: number): Promise<WatchReply>;
  /**
   * A new waiter for this backend's runs (`TaskQueue.waitFor`; one per
   * process): it registers runs ({@link watch}) and reads the feed of those
   * that settle, one feed per keyspace.
   */
  abstract createWaiter(): Waiter;
  /**
   * The partitions of a backend of several (docs/scale-out.md): this
   * process's count, the span workers consume, and the counts processes
   * recorded within the last minute; null for a backend of one keyspace.
   */
  abstract partitionView(): PartitionView | null;
}
