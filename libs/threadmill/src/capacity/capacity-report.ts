import type { MemoryUsage, MinuteMetrics, QueueCounts } from '../backend/task-backend.js';
import { capacityWarning } from './capacity-warning.js';

/** The outcomes whose runs are kept for a result TTL (quarantined runs are kept until requeued, with no TTL). */
export type KeptOutcome = 'successful' | 'failed';

/** A figure per kept outcome. */
export type PerOutcome = Readonly<Record<KeptOutcome, number>>;

/**
 * Bytes one stored run takes, used until enough runs are stored to measure
 * it: a finished run with a small result, as measured in
 * docs/benchmarks.md ("Redis memory per run").
 */
export const DOCUMENTED_BYTES_PER_RUN = 265;

/**
 * Fewest stored runs for the measured figure: below it, the backend's fixed
 * keys (counters, per-minute buckets, scripts' records) would dominate the
 * dataset and inflate the figure per run.
 */
export const MIN_MEASURED_RUNS = 1_000;

/** The minutes the finish rate is read over: the current one and the one before. */
export const RATE_MINUTES = 2;

/**
 * Redis's memory and where the results Threadmill keeps are taking it: what
 * the capacity guard checks, the inspector and the dashboard show, and the
 * metrics expose.
 */
export interface CapacityReport {
  /** Memory in use (`used_memory`), bytes; null when the backend cannot tell. */
  readonly usedBytes: number | null;
  /** `maxmemory`, bytes; null when none is set (then nothing is compared). */
  readonly maxBytes: number | null;
  /**
   * Memory in use once the results kept reach their steady state at the
   * current rate: `usedBytes` plus the runs still to be kept (finish rate ×
   * result TTL, less those kept now) × `bytesPerRun`. Null with `usedBytes`.
   */
  readonly projectedBytes: number | null;
  /** Bytes one stored run takes, measured or documented (see `bytesPerRunSource`). */
  readonly bytesPerRun: number;
  /**
   * `measured`: `used_memory_dataset` over the runs stored now (every
   * segment of every queue), so it includes each run's index entries and
   * the payloads and results actually stored; `documented`: too few runs to
   * measure, {@link DOCUMENTED_BYTES_PER_RUN}.
   */
  readonly bytesPerRunSource: 'measured' | 'documented';
  /** Runs stored now, every segment of every queue. */
  readonly storedRuns: number;
  /** Finished runs kept now, per outcome. */
  readonly kept: PerOutcome;
  /** Runs finished per second over the last {@link RATE_MINUTES} minutes, per kept outcome. */
  readonly finishedPerSecond: PerOutcome;
  /** How long each outcome's result is kept, ms. */
  readonly resultTtlMs: PerOutcome;
  /** The share of `maxBytes` at which the guard warns (`memoryWarningRatio`). */
  readonly warningRatio: number;
  /** Which figures reached `warningRatio × maxBytes`. */
  readonly over: { readonly used: boolean; readonly projected: boolean };
  /** What to tell an operator when a figure is over, naming the figures and the settings to change; else null. */
  readonly warning: string | null;
}

/** What a capacity report is computed from: one memory reading, the counts, the recent per-minute buckets. */
export interface CapacityInput {
  readonly memory: MemoryUsage;
  readonly counts: readonly QueueCounts[];
  /** Each queue's last {@link RATE_MINUTES} minutes, with the store's clock. */
  readonly windows: readonly { readonly now: number; readonly minutes: readonly MinuteMetrics[] }[];
  readonly resultTtlMs: PerOutcome;
  readonly warningRatio: number;
}

const SEGMENTS = ['ready', 'deferred', 'running', 'successful', 'failed', 'quarantined', 'cancelled'] as const;

/** The capacity report of one reading. */
export function projectCapacity(input: CapacityInput): CapacityReport {
  const { memory, counts, windows, resultTtlMs, warningRatio } = input;
  const storedRuns = counts.reduce((sum, count) => sum + SEGMENTS.reduce((n, s) => n + count[s], 0), 0);
  const kept = {
    successful: counts.reduce((sum, count) => sum + count.successful, 0),
    failed: counts.reduce((sum, count) => sum + count.failed, 0),
  };
  const measured = memory.datasetBytes !== null && storedRuns >= MIN_MEASURED_RUNS;
  const bytesPerRun = measured ? memory.datasetBytes! / storedRuns : DOCUMENTED_BYTES_PER_RUN;
  const finishedPerSecond = rates(windows);
  // The kept set stops growing once runs expire as fast as they finish:
  // rate × TTL runs. Those kept now are in `usedBytes` already.
  const steady = (outcome: KeptOutcome) => (finishedPerSecond[outcome] * resultTtlMs[outcome]) / 1000;
  const toCome = Math.max(0, steady('successful') + steady('failed') - kept.successful - kept.failed);
  const projectedBytes = memory.usedBytes === null ? null : memory.usedBytes + toCome * bytesPerRun;
  const limit = memory.maxBytes === null ? null : memory.maxBytes * warningRatio;
  const over = {
    used: limit !== null && memory.usedBytes !== null && memory.usedBytes >= limit,
    projected: limit !== null && projectedBytes !== null && projectedBytes >= limit,
  };
  const report = {
    usedBytes: memory.usedBytes,
    maxBytes: memory.maxBytes,
    projectedBytes,
    bytesPerRun,
    bytesPerRunSource: measured ? ('measured' as const) : ('documented' as const),
    storedRuns,
    kept,
    finishedPerSecond,
    resultTtlMs,
    warningRatio,
    over,
  };
  return { ...report, warning: capacityWarning(report) };
}

/**
 * Runs finished per second per kept outcome, summed over every queue: the
 * window is the minutes read, the current one counting only as far as it
 * went (at least a second), as the inspector's egress rate is computed.
 */
function rates(windows: CapacityInput['windows']): PerOutcome {
  const rate = { successful: 0, failed: 0 };
  for (const { now, minutes } of windows) {
    const seconds = Math.max((minutes.length - 1) * 60 + (now % 60_000) / 1000, 1);
    for (const minute of minutes) {
      rate.successful += minute.succeeded / seconds;
      rate.failed += minute.failed / seconds;
    }
  }
  return rate;
}
