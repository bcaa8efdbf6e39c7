import { SEGMENTS } from '../records/backend-records.js';
import type { MemoryUsage, MinuteMetrics, QueueCounts } from '../backend/task-backend.js';
import {
  DOCUMENTED_BYTES_PER_RUN,
  MIN_MEASURED_RUNS,
  type CapacityReport,
  type KeptOutcome,
  type PerOutcome,
} from './capacity-report.js';
import { capacityWarning } from './capacity-warning.js';

/** What a capacity report is computed from: one memory reading, the counts, the recent per-minute buckets. */
export interface CapacityInput {
  readonly memory: MemoryUsage;
  readonly counts: readonly QueueCounts[];
  /** Each queue's last `RATE_MINUTES` minutes, with the store's clock. */
  readonly windows: readonly { readonly now: number; readonly minutes: readonly MinuteMetrics[] }[];
  readonly resultTtlMs: PerOutcome;
  readonly warningRatio: number;
}

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
