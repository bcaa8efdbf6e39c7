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

/** The kill period ±25%, so kills do not beat in step with leases. */
const jittered = (ms: number) => ms * (0.75 + Math.random() / 2);

describe('fault: SIGKILL a random worker process while draining', () => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  it(
    `loses nothing and duplicates no more than the runs in flight at the kills (${RUNS} runs)`,
    async () => {
      rig = await FaultRig.start({ leaseTtlMs: LEASE_MS, workers: 2, concurrency: 16, prefetch: 4 });
      const ids = await rig.enqueue(RUNS, 30);
      const pool = rig.startPool();
      let kills = 0;
      let inFlightAtKills = 0;
      while (kills < KILLS) {
        await new Promise((resolve) => setTimeout(resolve, jittered(KILL_EVERY_MS)));
        const members = await rig.producer.backend.workers();
        if (members.length === 0) continue;
        const victim = members[Math.floor(Math.random() * members.length)]!;
        inFlightAtKills += await rig.heldBy(victim.id);
        try {
          process.kill(Number(victim.id.split(':').at(-2)), 'SIGKILL');
          kills++;
        } catch {
          // it exited meanwhile
        }
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
        notes: `final statuses ${JSON.stringify(verdict.statuses)}; ${(pool.log.match(/Started worker slot/g) ?? []).length} process starts`,
      });
      expect(kills).toBe(KILLS);
      // The kills landed while the queue was still draining.
      expect(inFlightAtKills).toBeGreaterThan(0);
      expect(verdict.lost).toEqual([]);
      expect(verdict.duplicates).toBeLessThanOrEqual(inFlightAtKills);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
