import { TaskBackend } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { settledRuns } from './support/settled-runs.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionedTaskBackend } from '../../libs/threadmill/src/backend/partitioned/partitioned.backend.js';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

const PARTITIONS = 6;
const RUNS = 6_000;
/** Longer than a failover (node timeout 5 s, then the replica's election): no lease expires because of the outage. */
const LEASE_TTL_MS = 15_000;
const POOL = { workers: 2, concurrency: 16, prefetch: 4 };

describe('fault: kill -9 a master of a partitioned backend mid-drain (3 masters, 3 replicas)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start(3, 1);
    client = cluster.client();
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('resumes once the replica takes over; loses no confirmed run; repeats at most what the dead master had not replicated', async () => {
    const alias = uniqueAlias('failover');
    const options = { alias, connection: client, partitions: PARTITIONS, leaseTtlMs: LEASE_TTL_MS };
    const producer = await Harness.start({ options });
    const witness = new Witness(alias);
    let pool: WorkerProcess | undefined;
    try {
      const backend = producer.module.get(TaskBackend) as unknown as PartitionedTaskBackend;
      const confirmed = (
        await producer.queue.enqueueMany(
          Array.from({ length: RUNS }, () => ({ task: 'WitnessService.work', args: [2] })),
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
          REDIS_CLUSTER_PORTS: cluster.nodes.map((node) => node.port).join(','),
          THREADMILL_PARTITIONS: String(PARTITIONS),
          LEASE_TTL_MS: String(LEASE_TTL_MS),
        },
      );
      await waitUntil('a tenth of the runs completed', async () => (await witness.completed()) >= RUNS / 10, 30_000);

      // A producer goes on enqueueing through the kill: what it was told is stored must be there after.
      const production = { on: true };
      let refused = 0;
      const producing$ = (async () => {
        while (production.on) {
          try {
            confirmed.push((await producer.queue.enqueue('WitnessService.work', [2])).id);
          } catch {
            refused++;
            await delay(20);
          }
        }
      })();
      await delay(300);
      const slot = keySlot(backend.partitionAliases()[1]!);
      const victim = await cluster.owner(slot);
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      await waitUntil(
        'a replica serves the slot',
        async () => (await cluster.owner(slot).catch(() => victim)) !== victim,
        30_000,
      );
      const failoverMs = Date.now() - killedAt;
      await delay(1_000);
      production.on = false;
      await producing$;

      await waitUntil(
        'every confirmed run completed',
        async () => (await witness.client.hlen(`witness:${alias}:completions`)) >= confirmed.length,
        90_000,
      );
      const { lost, unfinished } = await settledRuns(producer.queue, confirmed);
      const completions = await witness.completions();
      const repeated = [...completions.values()].filter((n) => n > 1).length;
      console.log(
        `partition failover: slot ${slot} failed over in ${failoverMs} ms; ${confirmed.length} runs confirmed ` +
          `(${refused} enqueues refused during the outage), lost ${lost.length}, unfinished ${unfinished.length}, ` +
          `executed more than once ${repeated}`,
      );
      expect(lost).toEqual([]);
      expect(unfinished).toEqual([]);
      // What the dead master had leased or settled but not yet sent its replica runs again: at most the runs the
      // pool can hold at once.
      expect(repeated).toBeLessThanOrEqual(POOL.workers * (POOL.concurrency + POOL.prefetch));
    } finally {
      await pool?.stop();
      witness.close();
      await producer.close();
    }
  }, 180_000);
});
