import type { FinishedOutcome, ResultTtls } from '../records/result-ttl.js';
import { TaskStatus } from '../records/task-status.enum.js';

/**
 * The rules of a run's place and life outside its lease, as plain
 * functions: ready order, which calls a status admits, room under a cap or
 * rate, and how long a finished run is kept. Like `lease-rules.ts`, the one
 * TypeScript statement of rules the scripts implement in Lua, run by the
 * in-memory backend and applied by the model-based test's model.
 */

/** A run's ready score (enqueue.lua): higher priority first, then enqueue order (`seq`, FIFO). */
export function readyScore(priority: number, seq: number): number {
  return -priority * 2 ** 44 + seq;
}

/** Whether a deferred run is due at `now`, for the broker to make READY (promote.lua). */
export function isDue(dueAt: number, now: number): boolean {
  return dueAt <= now;
}

/**
 * A dequeue removes a run only while it is pending: READY (ready now or
 * deferred), or a flow node WAITING on its dependencies (dequeue.lua).
 */
export function dequeueable(status: string): boolean {
  return status === TaskStatus.READY || status === TaskStatus.WAITING;
}

/** A cancel ends a run only while it is pending (READY, or a WAITING flow node) or running (cancel.lua). */
export function cancellable(status: string): boolean {
  return status === TaskStatus.READY || status === TaskStatus.RUNNING || status === TaskStatus.WAITING;
}

/** An operator's requeue takes back a run that ended badly: FAILED, QUARANTINED or CANCELLED (requeue-run.lua). */
export function requeueable(status: string): boolean {
  return status === TaskStatus.FAILED || status === TaskStatus.QUARANTINED || status === TaskStatus.CANCELLED;
}

/** Settled for good: nothing more happens to the run by itself, and its waiters are told. */
export function settled(status: string): boolean {
  return requeueable(status) || status === TaskStatus.SUCCESSFUL;
}

/** What a claim is held to for one queue or limit group; a part left out does not limit. */
export interface Limits {
  /** Runs that may be leased at once (a queue's cap, a group's concurrency). */
  readonly concurrency?: number | undefined;
  /** Runs that may be leased within the rate's window. */
  readonly max?: number | undefined;
}

/**
 * How many more runs a claim may lease under `limits` (gate-cap, gate-rate,
 * gate-groups), given how many are `running` and how many the rate log holds
 * in its window; Infinity when nothing limits.
 */
export function roomUnder(limits: Limits, running: number, logged: number): number {
  let room = Infinity;
  if (limits.concurrency !== undefined) room = Math.max(0, limits.concurrency - running);
  if (limits.max !== undefined) room = Math.min(room, Math.max(0, limits.max - logged));
  return room;
}

/** Whether a rate log entry made at `at` still counts at `now`: the window is (now - window, now] (gate-rate.lua). */
export function inRateWindow(at: number, now: number, windowMs: number): boolean {
  return at > now - windowMs;
}

/** The counter of a queue's `stats` that each outcome of an attempt adds to (effect-counts.lua). */
export const OUTCOME_COUNTER = {
  successful: 'succeeded',
  failed: 'failed',
  retry: 'retried',
  quarantine: 'quarantined',
} as const;

/**
 * How long a run that finished with `outcome` is kept: its task's TTL when
 * it declares one, else the backend's for that outcome. A CANCELLED run is
 * kept like a failure, for the backend's failed TTL (cancel.lua).
 */
export function keptFor(outcome: FinishedOutcome | 'cancelled', defaults: ResultTtls, taskTtl?: number): number {
  if (outcome === 'cancelled') return defaults.failed;
  return taskTtl ?? defaults[outcome];
}

/** Whether a finished run is past its TTL at `now`: it is kept through its last ms (trim.lua). */
export function pastTtl(finishedAt: number, ttlMs: number, now: number): boolean {
  return finishedAt + ttlMs < now;
}
