import type { RateLimit } from '../limits/rate-limit.js';
import type { MinuteMetrics, QueueCounts, StoredTaskLimit, WorkerRecord } from '../backend/task-backend.js';

/** A queue at a glance: its segments, its traffic over a window, how long its oldest ready run has waited. */
export interface QueueOverview extends QueueCounts {
  /** Runs enqueued per second over the window. */
  readonly ingressPerSecond: number;
  /** Runs finished (successful or failed) per second over the window. */
  readonly egressPerSecond: number;
  /** How long the longest-waiting ready run has waited, ms; null when none is ready. */
  readonly oldestReadyAgeMs: number | null;
  /** Cumulative counters: enqueued, succeeded, failed, retried, quarantined, staleAcks, requeued, dequeued. */
  readonly totals: Readonly<Record<string, number>>;
  /** The queue is paused: no worker claims its runs until it is resumed (`TaskInspector.pause`). */
  readonly paused: boolean;
  /** When it was paused, epoch ms (Redis clock); null when it is not paused. */
  readonly pausedAt: number | null;
  /** Most runs of the queue leased at once across every worker (`TaskInspector.setConcurrencyCap`); null: no cap. */
  readonly concurrencyCap: number | null;
  /** At most `max` runs of the queue start in any `perMs` (`TaskInspector.setRateLimit`); null: no limit. */
  readonly rateLimit: Required<RateLimit> | null;
}

/** A queue's rate limit, as a change left it. */
export interface RateLimitState {
  readonly queue: string;
  /** The limit now; null: none. */
  readonly limit: Required<RateLimit> | null;
  /** The limit before the call; null: none. */
  readonly previous: Required<RateLimit> | null;
}

/** A task's limit, as a change left it (`TaskInspector.setTaskLimit`). */
export interface TaskLimitState {
  readonly task: string;
  /** The limit now, its rate's slack filled in; null: none. */
  readonly limit: StoredTaskLimit | null;
  /** The limit before the call; null: none. */
  readonly previous: StoredTaskLimit | null;
}

/** A queue's concurrency cap, as a change left it. */
export interface ConcurrencyCapState {
  readonly queue: string;
  /** The cap now; null: none. */
  readonly cap: number | null;
  /** The cap before the call; null: none. */
  readonly previous: number | null;
}

/** What pausing or resuming a queue did. */
export interface PauseState {
  readonly queue: string;
  /** Whether the queue is paused now. */
  readonly paused: boolean;
  /** When it was paused, epoch ms (Redis clock); null when it is not paused. */
  readonly pausedAt: number | null;
  /** Whether this call changed it (false: it was already so). */
  readonly changed: boolean;
}

/** A lease a worker holds. */
export interface LeaseInfo {
  readonly id: string;
  readonly queue: string;
  readonly taskName: string;
  /** When the lease runs out unless renewed. */
  readonly deadline: Date;
}

/** A live worker process with the leases it holds. */
export interface WorkerInfo extends WorkerRecord {
  readonly leases: readonly LeaseInfo[];
}

export type { MinuteMetrics };
