import { afterEach, describe, expect, it } from 'vitest';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';

const RUNS = scale(3_000, 20_000);
const KILL_EVERY_MS = scale(1_000, 2_000);
const KILLS = scale(4, 10);
// Not a multiple of the kill period: a lease equal to it makes every
// recovered batch land on the next kill, an artefact no real crash has.
const LEASE_MS = scale(1_500, 3_000);
/** Half the runs have no retry policy: a kill may fail those it cut after their start, and only those. */
const WITHOUT_RETRY = 0.5;
/**
 * Each of those holds its process's event loop this long as it starts, so
 * that kills also land between a start and its start mark (a window of
 * microseconds otherwise): such an attempt is not charged, and runs again.
 */
const BUSY_MS = 1;

/** The kill period ±25%, so kills do not beat in step with leases. */
const jittered = (ms: number) => ms * (0.75 + Math.random() / 2);

describe('fault: SIGKILL a random worker process while draining', () => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  it(
    `loses nothing, charges no attempt that did not start, and duplicates no more than the runs in flight at the kills (${RUNS} runs)`,
    async () => {
      rig = await FaultRig.start({ leaseTtlMs: LEASE_MS, workers: 2, concurrency: 16, prefetch: 4 });
      const ids = await rig.enqueue(RUNS, 30, { withoutRetry: WITHOUT_RETRY, busyMs: BUSY_MS });
      const pool = rig.startPool();
      let kills = 0;
      let inFlightAtKills = 0;
      while (kills < KILLS) {
        await new Promise((resolve) => setTimeout(resolve, jittered(KILL_EVERY_MS)));
        const members = await rig.producer.backend.workers();
        if (members.length === 0) continue;
        const victim = members[Math.floor(Math.random() * members.length)]!;
        // Null when its record outlived it: killed already, or exited meanwhile.
        const held = await rig.sigkill(victim.id);
        if (held === null) continue;
        kills++;
        inFlightAtKills += held;
      }
      const results = await rig.settle(ids, 120_000);
      const verdict = await rig.verdict(ids, results);
      report({
        scenario: 'SIGKILL a random worker process while draining',
        runs: ids.length,
        faults: `${kills} SIGKILLs, one every ${KILL_EVERY_MS / 1000} s ±25% (2 processes × 16 slots, lease ${LEASE_MS / 1000} s)`,
        lost: verdict.lost.length,
        duplicates: verdict.duplicates,
        duplicateBound: inFlightAtKills,
        started: verdict.started,
        charged: verdict.charged,
        notes:
          `half the runs without a retry policy (${BUSY_MS} ms synchronous at their start); final statuses ${JSON.stringify(verdict.statuses)}; ` +
          `${(pool.log.match(/Started worker slot/g) ?? []).length} process starts; ` +
          `${verdict.touched} runs started in a killed process, ${rig.kills.cut.size} leased by one at its death; ` +
          `${verdict.undercharged} runs charged less than started; ` +
          `${verdict.failedByKill.length} without a retry policy FAILED by a kill after their start`,
      });
      expect(kills).toBe(KILLS);
      // The kills landed while the queue was still draining, in processes that had started runs.
      expect(inFlightAtKills).toBeGreaterThan(0);
      expect(verdict.touched).toBeGreaterThan(0);
      // Every run ended SUCCESSFUL, or FAILED by a kill that cut it after it started.
      expect(verdict.lost).toEqual([]);
      expect(verdict.failedWithoutKill).toEqual([]);
      expect(verdict.duplicates).toBeLessThanOrEqual(inFlightAtKills);
      // A run is charged only attempts that started; one that started more
      // often than charged had an attempt cut by a kill before its start mark landed.
      expect(verdict.overcharged).toEqual([]);
      expect(verdict.unexplainedUndercharge).toEqual([]);
      // A run that started only in processes never killed ran once and was
      // charged once, even if a killed process had leased it before; and so
      // did every run that no process leased when it was killed.
      expect(verdict.untouchedNotClean).toEqual([]);
      expect(verdict.uncleanNotCut).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
