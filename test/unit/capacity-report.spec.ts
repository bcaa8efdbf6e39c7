import { describe, expect, it } from 'vitest';
import type { MemoryUsage, QueueCounts } from '../../libs/threadmill/src/backend/task-backend.js';
import { CapacityAlarm } from '../../libs/threadmill/src/capacity/capacity-alarm.js';
import { projectCapacity, type CapacityInput } from '../../libs/threadmill/src/capacity/capacity-projection.js';
import { DOCUMENTED_BYTES_PER_RUN } from '../../libs/threadmill/src/capacity/capacity-report.js';

const MB = 1024 * 1024;
const HOUR = 3_600_000;

const counts = (successful: number, ready = 0): QueueCounts => ({
  queue: 'default',
  waiting: 0,
  ready,
  deferred: 0,
  running: 0,
  successful,
  failed: 0,
  quarantined: 0,
  cancelled: 0,
});

/** A reading 30 s into a minute, after `succeeded` runs finished over the two minutes read (90 s). */
function input(memory: Partial<MemoryUsage>, succeeded: number, kept: number, ready = 0): CapacityInput {
  const minute = {
    at: 0,
    enqueued: 0,
    started: 0,
    waitMs: 0,
    succeeded: 0,
    failed: 0,
    retried: 0,
    quarantined: 0,
    cancelled: 0,
  };
  return {
    memory: { usedBytes: 10 * MB, maxBytes: 100 * MB, datasetBytes: 8 * MB, ...memory },
    counts: [counts(kept, ready)],
    windows: [{ now: 120_000 + 30_000, minutes: [{ ...minute, succeeded }, minute] }],
    resultTtlMs: { successful: HOUR, failed: HOUR },
    warningRatio: 0.8,
  };
}

describe('the capacity report', () => {
  it('projects the runs still to be kept at the finish rate, at the bytes per run measured over the stored runs', () => {
    // 90 runs over 90 s: 1 run/s kept an hour is 3,600 runs; 2,000 are kept now, 1,600 to come.
    const report = projectCapacity(input({}, 90, 2_000));
    expect(report.finishedPerSecond).toEqual({ successful: 1, failed: 0 });
    expect(report.bytesPerRunSource).toBe('measured');
    expect(report.bytesPerRun).toBe((8 * MB) / 2_000);
    expect(report.projectedBytes).toBe(10 * MB + 1_600 * ((8 * MB) / 2_000));
    expect(report.over).toEqual({ used: false, projected: false });
    expect(report.warning).toBeNull();
  });

  it('takes the documented bytes per run while too few runs are stored to measure it', () => {
    const report = projectCapacity(input({}, 90, 10));
    expect(report.bytesPerRunSource).toBe('documented');
    expect(report.projectedBytes).toBe(10 * MB + (3_600 - 10) * DOCUMENTED_BYTES_PER_RUN);
  });

  it('warns when the projection reaches the threshold, naming the figures and the settings to change', () => {
    // 90 runs/s kept an hour: 324,000 runs of 4 KB.
    const report = projectCapacity(input({ datasetBytes: 4_096_000 }, 8_100, 1_000));
    expect(report.over).toEqual({ used: false, projected: true });
    expect(report.warning).toMatch(/^Redis memory projected for kept results reaches \d+% of maxmemory/);
    expect(report.warning).toMatch(/used 10\.0 MB of maxmemory 100\.0 MB, projected [\d.]+ GB/);
    expect(report.warning).toMatch(/90\.0 kept runs\/s: 90\.0 successful, 0\.0 failed\) × resultTtlMs 3600000 ms/);
    expect(report.warning).toMatch(/4\.0 KB per run \(measured\), less the 1000 kept now/);
    expect(report.warning).toMatch(/Lower resultTtlMs, raise maxmemory, or purge/);
  });

  it('warns when the memory in use reaches the threshold, whatever the rate', () => {
    const report = projectCapacity(input({ usedBytes: 85 * MB }, 0, 1_000));
    expect(report.over).toEqual({ used: true, projected: true });
    expect(report.warning).toMatch(/^Redis memory in use has reached 85% of maxmemory \(memoryWarningRatio 0\.8\)/);
  });

  it('compares nothing without maxmemory, and projects nothing without a memory figure', () => {
    expect(projectCapacity(input({ usedBytes: 900 * MB, maxBytes: null }, 8_100, 0))).toMatchObject({
      over: { used: false, projected: false },
      warning: null,
    });
    expect(projectCapacity(input({ usedBytes: null, maxBytes: null, datasetBytes: null }, 90, 0))).toMatchObject({
      projectedBytes: null,
      warning: null,
    });
  });
});

describe('the capacity alarm', () => {
  const calm = projectCapacity(input({}, 0, 0));
  const projected = projectCapacity(input({ datasetBytes: 4 * MB }, 8_100, 1_000));
  const full = projectCapacity(input({ usedBytes: 85 * MB }, 8_100, 1_000));

  it('warns once per crossing, again when the memory in use crosses too, and after a figure cleared', () => {
    const alarm = new CapacityAlarm();
    expect(alarm.observe(calm)).toBeNull();
    expect(alarm.observe(projected)).toEqual({ level: 'warn', message: projected.warning });
    expect(alarm.observe(projected)).toBeNull();
    expect(alarm.observe(full)).toEqual({ level: 'warn', message: full.warning });
    expect(alarm.observe(full)).toBeNull();
    expect(alarm.observe(projected)).toBeNull();
    expect(alarm.observe(calm)).toMatchObject({ level: 'log', message: expect.stringMatching(/back under/) });
    expect(alarm.observe(calm)).toBeNull();
    expect(alarm.observe(projected)).toEqual({ level: 'warn', message: projected.warning });
  });
});
