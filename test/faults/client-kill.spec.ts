import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';

const RUNS = scale(3_000, 20_000);
const KILL_EVERY_MS = 250;
/**
 * Half the runs have no retry policy. No worker dies and no lease lapses
 * here (a dropped connection is back in milliseconds, its calls resent and
 * recognised), so no run is touched: each must run once and be charged once,
 * with or without a policy.
 */
const WITHOUT_RETRY = 0.5;

describe('fault: CLIENT KILL TYPE normal, repeatedly', () => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  it(
    'loses nothing, keeps consuming, and runs and charges every run exactly once',
    async () => {
      rig = await FaultRig.start({ leaseTtlMs: 2_000, workers: 2, concurrency: 16 });
      const ids = await rig.enqueue(RUNS, 20, { withoutRetry: WITHOUT_RETRY });
      rig.startPool();
      await rig.completedAtLeast(1);
      const admin = new Redis(rig.redis.url);
      let kills = 0;
      let killed = 0;
      try {
        while ((await rig.witness.completed()) < RUNS * 0.9) {
          killed += Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
          kills++;
          await delay(KILL_EVERY_MS);
        }
      } finally {
        admin.disconnect();
      }
      const results = await rig.settle(ids, 120_000);
      const verdict = await rig.verdict(ids, results);
      report({
        scenario: 'CLIENT KILL TYPE normal, repeatedly',
        runs: ids.length,
        faults: `${kills} CLIENT KILL rounds every ${KILL_EVERY_MS} ms, ${killed} connections killed`,
        lost: verdict.lost.length,
        duplicates: verdict.duplicates,
        started: verdict.started,
        charged: verdict.charged,
        notes: `half the runs without a retry policy; final statuses ${JSON.stringify(verdict.statuses)}; every process kept consuming to the end`,
      });
      expect(kills).toBeGreaterThanOrEqual(3);
      expect(verdict.lost).toEqual([]);
      expect(verdict.statuses).toEqual({ SUCCESSFUL: RUNS });
      expect(verdict.overcharged).toEqual([]);
      expect(verdict.untouchedNotClean).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
