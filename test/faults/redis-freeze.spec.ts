import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';

const RUNS = scale(1_000, 10_000);
const LEASE_MS = 1_000;
const WORKERS = 2;
const CONCURRENCY = 16;
const PREFETCH = 4;
/**
 * Runs that can be started and not yet acknowledged: a process holds at most
 * concurrency + prefetch runs, and a slot frees as soon as its attempt
 * returns, so while acknowledgements wait on a frozen Redis, held runs start.
 */
const EXECUTING_AT_MOST = WORKERS * (CONCURRENCY + PREFETCH);

describe('fault: SIGSTOP redis-server longer than the lease, then SIGCONT', () => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  it(
    'rejects the stale acknowledgements and ends with every run SUCCESSFUL once',
    async () => {
      rig = await FaultRig.start({
        leaseTtlMs: LEASE_MS,
        workers: WORKERS,
        concurrency: CONCURRENCY,
        prefetch: PREFETCH,
      });
      // Only the task with a retry policy: here leases lapse with no worker
      // dying, so a run without one that had started when the freeze began
      // would rightly end FAILED (AcknowledgementTimeoutError).
      const ids = await rig.enqueue(RUNS, 100);
      rig.startPool();
      await rig.completedAtLeast(RUNS * 0.3);
      const inFlight = await rig.inFlight();
      rig.redis.pause();
      await delay(LEASE_MS * 2.5);
      rig.redis.resume();

      const results = await rig.settle(ids, 120_000);
      const verdict = await rig.verdict(ids, results);
      const stale = await rig.staleAcks();
      report({
        scenario: 'SIGSTOP redis-server for 2.5 × the lease, then SIGCONT',
        runs: ids.length,
        faults: `1 freeze of ${(LEASE_MS * 2.5) / 1000} s with ${inFlight} runs leased (lease ${LEASE_MS / 1000} s)`,
        lost: verdict.lost.length,
        duplicates: verdict.duplicates,
        duplicateBound: EXECUTING_AT_MOST,
        started: verdict.started,
        charged: verdict.charged,
        notes: `${stale} stale acknowledgements rejected; final statuses ${JSON.stringify(verdict.statuses)}`,
      });
      expect(verdict.lost).toEqual([]);
      expect(verdict.statuses).toEqual({ SUCCESSFUL: RUNS });
      expect(stale).toBeGreaterThan(0);
      // Only runs started before their lease could lapse run again: a run
      // whose lease may have lapsed while it waited is not started.
      expect(verdict.duplicates).toBeLessThanOrEqual(EXECUTING_AT_MOST);
      // The freeze touches the runs it caught, without a kill: a stale outcome
      // may leave a run that started uncharged (it runs again), but no run is
      // charged an attempt that did not start.
      expect(verdict.overcharged).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
