import type { QuarantineReason, TaskError } from './task-result.js';

/*
 * The records the backend contract (`TaskBackend`) speaks in: runs to
 * store and as leased, attempts' outcomes, leases and their renewals, worker
 * records, and the counts and metrics read back. `backend/task-backend.ts`
 * re-exports them.
 */

/** A run to store, its payload already encoded. */
export interface NewRun {
  readonly id: string;
  readonly queue: string;
  readonly priority: number;
  /** Epoch ms before which it must not start (producer's clock), or 0. */
  readonly runAt: number;
  /** Delay in ms from the store time (Redis clock), or 0. */
  readonly delayMs: number;
  /** Lease override in ms, or 0 for the backend default. */
  readonly leaseTtlMs: number;
  /** Encoded payload; immutable once stored. */
  readonly payload: string;
  /**
   * The payload holds no newline, so the backend need not search it. The
   * queue's payloads are JSON.stringify output, which escapes every newline;
   * the search would flatten each one, a string built in pieces, into a copy
   * (time and garbage per run of a bulk call: docs/optimisations.md, step 42).
   * Left out, the backend searches.
   */
  readonly singleLine?: boolean;
  /**
   * The caller chose the id: store the run only if no run has it. A fresh
   * ULID Threadmill generated cannot collide, so it skips that check.
   */
  readonly idempotent: boolean;
  /**
   * The run's deduplication (never with `idempotent`): stored only if its key
   * holds no run, else answered with the key's run (see `docs/deduplication.md`).
   */
  readonly dedupe?: RunDedupe;
  /**
   * The run's limit group, when its task declares a limit (`@Task({ limit })`):
   * `<task>`, or `<task>\n<key>` for a limit per key. Claims lease it only
   * while its group has room (see `docs/rate-limits.md`).
   */
  readonly limitGroup?: string;
}

/** How a new run is deduplicated: its key, scoped to the run's queue, and the mode's settings (validated). */
export interface RunDedupe {
  readonly key: string;
  readonly mode: 'drop' | 'debounce';
  /** drop: how long after the first enqueue the key holds whatever its run's state (0: none); debounce: the quiet period. */
  readonly ttlMs: number;
  /** debounce: the latest a run is pushed back to, after its first enqueue, in ms; 0 for no cap. */
  readonly maxWaitMs: number;
  /** drop: the key holds while its run waits for its start ('start') or until it settles ('finish'). */
  readonly releaseOn: 'start' | 'finish';
}

/** What `store` did with each run. */
export interface StoreOutcome {
  /** Redis time of the store, epoch ms. */
  readonly now: number;
  /** Per run, in order: true when stored, false when its id already existed or it was deduplicated. */
  readonly created: readonly boolean[];
  /**
   * Per run, in order, the id of the run a deduplicated run was answered with
   * (its key held that run), else undefined; absent when no run of the call was.
   */
  readonly deduplicated?: readonly (string | undefined)[];
}

/** A queue's rate limit as stored: every field set (see `RateLimit`). */
export interface StoredRateLimit {
  readonly max: number;
  readonly perMs: number;
  readonly startSlackMs: number;
}

/**
 * A task's limit as stored: per limit group (the task, or the task and a
 * key), a rate (every field set) and/or a concurrency (see `TaskLimit`).
 */
export interface StoredTaskLimit {
  readonly rate?: StoredRateLimit;
  readonly concurrency?: number;
}

/** A run leased to a worker (or claimed by the reaper). */
export interface LeasedRun {
  readonly id: string;
  readonly queue: string;
  /** Fences every later acknowledgement and renewal of this lease. */
  readonly token: string;
  /** Lease deadline, epoch ms (Redis clock). */
  readonly deadline: number;
  readonly payload: string;
  readonly attempts: number;
  readonly workerIds: readonly string[];
  readonly errors: readonly TaskError[];
  readonly enqueuedAt: number;
  readonly startedAt: number | null;
  /** Redis time of the claim, epoch ms. */
  readonly claimedAt: number;
  /**
   * Lease expiries in a row. For a claimed run above 0 makes it a suspect
   * (it may kill its worker); for a reaped run it includes this expiry.
   */
  readonly recoveries?: number;
  /**
   * Set for a run of a rate-limited queue or limit group: its attempt may
   * start only within this many ms of {@link claimedAt}; later, its worker
   * hands it back unstarted (see `docs/rate-limits.md`).
   */
  startWithinMs?: number;
  /**
   * Set with {@link startWithinMs} by the backend: the `performance.now()`
   * after which the attempt may no longer start. It is measured on this
   * process's monotonic clock, so that no decision compares this host's wall
   * clock with Redis's (`docs/guarantees.md#clocks`).
   */
  startBy?: number;
}

/** How an attempt ended. */
export type Outcome =
  | { readonly kind: 'successful'; readonly returnValue: string | undefined }
  | { readonly kind: 'failed'; readonly error: TaskError }
  | {
      readonly kind: 'retry';
      readonly error: TaskError;
      readonly delayMs: number;
      /**
       * The task asked for it (`context.retryAfter`): the worker defers the run
       * without charging the attempt (`TaskBackend.defer`) instead of acknowledging it.
       */
      readonly uncharged?: true;
    }
  | {
      readonly kind: 'quarantine';
      readonly reason: QuarantineReason;
      readonly message: string;
      /** The attempt's error, if it had one, for the error history. */
      readonly error?: TaskError;
    };

/** The outcome of one attempt, fenced by the lease token it was claimed under. */
export interface Acknowledgement {
  readonly id: string;
  readonly queue: string;
  readonly token: string;
  readonly outcome: Outcome;
  /**
   * Who settles the run: a worker's attempt (ends a series of lease expiries)
   * or the reaper (an expired lease).
   * @defaultValue `'worker'`
   */
  readonly source?: 'worker' | 'reaper';
  /**
   * How long the run is kept if this outcome finishes it (successful or
   * failed), in ms, when its task sets its own `resultTtlMs`; undefined keeps
   * it for the backend's `resultTtlMs` of the outcome. Ignored for a retry or
   * a quarantine.
   */
  readonly resultTtlMs?: number;
}

/** The segments of a queue, where its runs are, in the order of a run's life (listings and counts show them so). */
export const SEGMENTS = [
  'waiting',
  'ready',
  'deferred',
  'running',
  'successful',
  'failed',
  'quarantined',
  'cancelled',
] as const;

/** A segment of a queue (see {@link SEGMENTS}). */
export type Segment = (typeof SEGMENTS)[number];

/** A lease, named by its run and its token (which fences every write under it). */
export type LeaseRef = Pick<LeasedRun, 'id' | 'queue' | 'token'>;

/**
 * What a running attempt reported since its previous report call
 * (`context.progress`, `context.log`), fenced by its lease.
 */
export interface RunReport extends LeaseRef {
  /** The JSON of the latest progress value, when one was reported. */
  readonly progress?: string;
  /** Lines logged, oldest first: without newlines, each already cut to its size limit. */
  readonly lines: readonly string[];
}

/** What a report stored, as a waiter's feed gives it: the progress JSON and the new lines. */
export interface ReportedEntry {
  readonly progress?: string;
  readonly lines: readonly string[];
}

/**
 * A renewal's answer for one lease: `held` (extended), `paused` (extended,
 * and its queue is paused), `lost` (it expired or was reaped: the attempt's
 * outcome will be discarded), `cancelled` (its run was cancelled, which
 * revoked the lease: the attempt's outcome will be discarded too) or
 * `unanswered` (only from a backend of several partitions: the call to the
 * lease's partition failed or did not answer in time, while the others
 * answered; the lease may or may not have been extended, so its holder keeps
 * its last known deadline).
 */
export type RenewedLease = 'held' | 'paused' | 'lost' | 'cancelled' | 'unanswered';

/** A lease to extend, fenced by its token. */
export interface LeaseRenewal {
  readonly id: string;
  readonly queue: string;
  readonly token: string;
  readonly leaseTtlMs: number;
}

/** What a worker process publishes about itself with every renewal (its heartbeat). */
export interface WorkerHeartbeat {
  /** `host:pid:slot` */
  readonly id: string;
  readonly queues: readonly string[];
  readonly concurrency: number;
  /** Epoch ms the process started consuming. */
  readonly startedAt: number;
  /** Runs finished by this process. */
  readonly done: number;
  /** Runs it holds now (running and prefetched). */
  readonly held: number;
  /**
   * How far the process's wall clock runs ahead of Redis's (ms; negative:
   * behind), as it estimated from Redis's replies (`TaskBackend.clockOffsetMs`).
   */
  readonly clockOffsetMs?: number;
}

/** A live worker process, as last recorded. */
export interface WorkerRecord extends WorkerHeartbeat {
  /** Epoch ms (Redis clock) of its latest heartbeat. */
  readonly seenAt: number;
}

/** One minute of a queue's activity, from the metrics buckets. */
export interface MinuteMetrics {
  /** Epoch ms of the minute's start. */
  readonly at: number;
  readonly enqueued: number;
  readonly started: number;
  /** Summed wait from enqueue to start of the runs started, ms. */
  readonly waitMs: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly retried: number;
  readonly quarantined: number;
  /** Runs cancelled (pending or running). */
  readonly cancelled: number;
}

/** Counts of one queue's segments. */
export interface QueueCounts {
  readonly queue: string;
  /** Flow nodes WAITING for their dependencies (`docs/flows.md`). */
  readonly waiting: number;
  readonly ready: number;
  readonly deferred: number;
  readonly running: number;
  readonly successful: number;
  readonly failed: number;
  readonly quarantined: number;
  readonly cancelled: number;
}

/**
 * The memory of the store behind a backend, as Redis reports it (`INFO
 * memory`). A figure the backend cannot tell is null.
 */
export interface MemoryUsage {
  /** Memory in use (`used_memory`), bytes. */
  readonly usedBytes: number | null;
  /** The limit (`maxmemory`), bytes; null when none is set. */
  readonly maxBytes: number | null;
  /** What the keys and values take (`used_memory_dataset`: in use, less Redis's own overhead), bytes. */
  readonly datasetBytes: number | null;
}

/** The stored fields of one run, as the backend returns them. */
export type StoredRun = Readonly<Record<string, string>>;

/** How far a purge has gone, reported after each of its chunks. */
export interface PurgeProgress {
  /** The queue being purged. */
  readonly queue: string;
  /** Runs removed so far, by every chunk up to this one. */
  readonly removed: number;
  /** Runs this chunk removed. */
  readonly chunkRemoved: number;
  /** Whether this was the last chunk. */
  readonly done: boolean;
}

/** Options of a purge (`TaskInspector.purge`, `TaskBackend.purge`). */
export interface PurgeOptions {
  /** Called after each chunk of the purge (once, at the end, for a purge of a single chunk). */
  readonly onProgress?: (progress: PurgeProgress) => void;
  /**
   * Most segment entries one chunk (one script call) looks at, so about the
   * most runs it removes: a chunk that walks a set with `ZSCAN` takes what one
   * step returns, which may pass its `COUNT` by a hash bucket's chain, or by a
   * small set read whole (up to `zset-max-listpack-entries`, 128 by default).
   * At most {@link MAX_CHUNK_SIZE}.
   * @defaultValue 1000 (about 3 ms of Redis time: docs/scale.md)
   */
  readonly chunkSize?: number;
}

/**
 * The largest `chunkSize` a purge or a requeue of a segment accepts: a chunk
 * is meant to hold Redis for a few milliseconds, and `unpack` in a script
 * takes a few thousand values.
 */
export const MAX_CHUNK_SIZE = 4000;

/** The segments whose runs a requeue sends back to READY. */
export type RequeueableSegment = (typeof REQUEUEABLE_SEGMENTS)[number];

/** The segments an operator may requeue as a whole. */
export const REQUEUEABLE_SEGMENTS = ['failed', 'quarantined', 'cancelled'] as const satisfies readonly Segment[];

/** How far a requeue of a segment has gone, reported after each of its chunks. */
export interface RequeueAllProgress {
  /** The queue whose segment is requeued. */
  readonly queue: string;
  /** The segment requeued. */
  readonly segment: RequeueableSegment;
  /** Runs requeued so far, by every chunk up to this one. */
  readonly requeued: number;
  /** Runs this chunk requeued. */
  readonly chunkRequeued: number;
  /** Whether this was the last chunk. */
  readonly done: boolean;
}

/** Options of a requeue of a segment (`TaskInspector.requeueAll`, `TaskBackend.requeueAll`). */
export interface RequeueAllOptions {
  /** Called after each chunk (once, at the end, for a requeue of a single chunk). */
  readonly onProgress?: (progress: RequeueAllProgress) => void;
  /**
   * Most index entries one chunk (one script call) looks at, so the most runs
   * it requeues (its first chunk also requeues the runs that finished in its
   * own millisecond). At most {@link MAX_CHUNK_SIZE}.
   * @defaultValue 250 (about 5 ms of Redis time at a million failed runs: docs/scale.md)
   */
  readonly chunkSize?: number;
}
