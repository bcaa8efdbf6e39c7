import { UnconfirmedEnqueueError } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { settledRuns } from './support/settled-runs.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { command } from '../support/redis-command.js';
import { Harness } from '../support/harness.js';
import { SENTINEL_MASTER, SentinelRedis } from '../support/redis-sentinel.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';

const RUNS = scale(1_500, 6_000);
/** Longer than a failover (a sentinel holds the primary down after 1 s, then an election): no lease expires because of it. */
const LEASE_TTL_MS = 15_000;
const POOL = { workers: 2, concurrency: 8, prefetch: 4 };
const CONFIRM = { replicas: 1, timeoutMs: 1_000 };
/** What a run works, in ms: long enough that the pool (16 slots) is still draining when the primary dies. */
const WORK_MS = 50;

describe('fault: kill -9 the primary under Sentinel mid-drain, with confirmEnqueues (1 primary, 1 replica, 3 sentinels)', () => {
  let redis: SentinelRedis;
  beforeAll(async () => {
    redis = await SentinelRedis.start();
  }, 60_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it(
    'resumes on the promoted replica; loses no confirmed run; repeats at most what the pool held',
    async () => {
      const alias = uniqueAlias('sentinel-failover');
      const producer = await Harness.start({
        options: { alias, connection: redis.connection(), confirmEnqueues: CONFIRM, leaseTtlMs: LEASE_TTL_MS },
      });
      const witness = new Witness(alias);
      let pool: WorkerProcess | undefined;
      try {
        const confirmed = (
          await producer.queue.enqueueMany(
            Array.from({ length: RUNS }, () => ({ task: 'WitnessService.work', args: [WORK_MS] })),
            { atomic: false },
          )
        ).map((run) => run.id);
        pool = WorkerProcess.start(
          alias,
          [
            '--workers',
            String(POOL.workers),
            '--concurrency',
            String(POOL.concurrency),
            '--prefetch',
            String(POOL.prefetch),
          ],
          {
            REDIS_SENTINEL_PORTS: redis.sentinelPorts,
            REDIS_SENTINEL_NAME: SENTINEL_MASTER,
            LEASE_TTL_MS: String(LEASE_TTL_MS),
          },
        );
        await waitUntil('a tenth of the runs completed', async () => (await witness.completed()) >= RUNS / 10, 60_000);

        // A producer goes on enqueueing through the kill: what it was told is stored and confirmed must be there after.
        const production = { on: true };
        const told = { unconfirmed: 0, refused: 0 };
        const producing = (async () => {
          while (production.on) {
            try {
              confirmed.push((await producer.queue.enqueue('WitnessService.work', [WORK_MS])).id);
            } catch (error) {
              // Stored but confirmed by no replica (the promoted replica has none of its own until the old
              // primary rejoins), or not stored at all while no primary answered: nobody was told it was kept.
              if (error instanceof UnconfirmedEnqueueError) told.unconfirmed++;
              else told.refused++;
              await delay(20);
            }
          }
        })();
        await delay(300);
        const confirmedBeforeKill = confirmed.length;
        const completedAtKill = await witness.completed();
        const killedAt = Date.now();
        const { killed, promoted } = await redis.killPrimary();
        const failoverMs = Date.now() - killedAt;
        const completedAtPromotion = await witness.completed();

        // The old primary comes back from its AOF; the sentinels make it a replica of the new one, and
        // confirmed enqueues succeed again.
        await killed.restart();
        // Made a replica of the new primary as soon as it is back, as the sentinels make it a second or so later:
        // back from its AOF it is a primary with the runs of before the kill, and a client that reached it
        // before the sentinels demote it would run them again (docs/guarantees.md, Sentinel).
        await command(killed, 'REPLICAOF', '127.0.0.1', String(promoted.port));
        const confirmedAtRestart = confirmed.length;
        await waitUntil(
          'a confirmed enqueue succeeds again once the old primary replicates the new one',
          () => confirmed.length > confirmedAtRestart,
          60_000,
        );
        production.on = false;
        await producing;

        await waitUntil(
          'every confirmed run completed',
          async () => (await witness.client.hlen(`witness:${alias}:completions`)) >= confirmed.length,
          90_000,
        );
        const { lost, unfinished } = await settledRuns(producer.queue, confirmed);
        const completions = await witness.completions();
        const repeated = [...completions.values()].filter((n) => n > 1).length;
        const completedAfter = (await witness.completed()) - completedAtPromotion;
        console.log(
          `sentinel failover: the sentinels named the replica primary ${failoverMs} ms after the kill; ` +
            `${confirmed.length} runs confirmed (${confirmed.length - confirmedBeforeKill} by single enqueues ` +
            `through the kill), ${told.unconfirmed} enqueues stored unconfirmed and ${told.refused} refused; ` +
            `lost ${lost.length}, unfinished ${unfinished.length}, executed more than once ${repeated}; ` +
            `${completedAtKill} executions completed before the kill, ${completedAfter} after the promotion`,
        );
        // Mid-drain: runs were still to run when the primary died.
        expect(completedAtKill).toBeLessThan(confirmedBeforeKill);
        expect(lost).toEqual([]);
        expect(unfinished).toEqual([]);
        // The workers went on, on the new primary.
        expect(completedAfter).toBeGreaterThan(0);
        // What the dead primary had leased or settled but not yet sent its replica runs again: at most the runs
        // the pool can hold at once.
        expect(repeated).toBeLessThanOrEqual(POOL.workers * (POOL.concurrency + POOL.prefetch));
      } finally {
        await pool?.stop();
        witness.close();
        await producer.close();
      }
    },
    SCENARIO_TIMEOUT_MS,
  );
});
