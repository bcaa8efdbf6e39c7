import { TaskBackend, TaskStatus } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionedTaskBackend } from '../../libs/threadmill/src/backend/partitioned/partitioned.backend.js';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

const RUNS = 30_000;
const PARTITIONS = 6;

describe('partitions on a Redis Cluster of 3 masters and 3 replicas (real worker processes)', () => {
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

  it(`drains ${RUNS} runs over ${PARTITIONS} partitions with 2 worker processes: every run SUCCESSFUL once, every master held runs`, async () => {
    const alias = uniqueAlias('scale');
    const producer = await Harness.start({ options: { alias, connection: client, partitions: PARTITIONS } });
    const witness = new Witness(alias);
    let pool: WorkerProcess | undefined;
    try {
      const backend = producer.module.get(TaskBackend) as unknown as PartitionedTaskBackend;
      const ids: string[] = [];
      for (let first = 0; first < RUNS; first += 5_000) {
        const runs = await producer.queue.enqueueMany(
          Array.from({ length: 5_000 }, () => ({ task: 'WitnessService.label', args: ['drained'] })),
          { atomic: false },
        );
        for (const run of runs) ids.push(run.id);
      }

      // Every master holds partitions (two each, as the tags were chosen) and their runs, before the drain.
      const masters = await cluster.masters();
      expect(masters).toHaveLength(3);
      const held = await Promise.all(
        masters.map(async (master) => {
          let keys = 0;
          let partitions = 0;
          for (const tag of backend.partitionAliases()) {
            const inSlot = Number(await cluster.command(master, 'CLUSTER', 'COUNTKEYSINSLOT', String(keySlot(tag))));
            if (inSlot > 0) partitions++;
            keys += inSlot;
          }
          return { partitions, keys };
        }),
      );
      expect(held.map((master) => master.partitions)).toEqual([2, 2, 2]);
      for (const p of backend.partitions()) {
        expect((await backend.part(p).counts(['default']))[0]!.ready).toBe(RUNS / PARTITIONS);
      }

      const startedAt = Date.now();
      pool = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '64'], {
        REDIS_CLUSTER_PORTS: cluster.nodes.map((node) => node.port).join(','),
        THREADMILL_PARTITIONS: String(PARTITIONS),
      });
      await waitUntil(
        `${RUNS} runs completed`,
        async () => (await witness.client.hlen(`witness:${alias}:completions`)) === RUNS,
        50_000,
      );
      const drainMs = Date.now() - startedAt;

      // Exactly once, by the witness outside Threadmill.
      const completions = await witness.completions();
      expect(completions.size).toBe(RUNS);
      expect([...completions.values()].every((n) => n === 1)).toBe(true);
      expect((await witness.labels()).get('drained')).toBe(RUNS);
      // SUCCESSFUL, by both worker processes, and one queue's counts.
      const pids = new Set<string>();
      for (let first = 0; first < RUNS; first += 1_000) {
        for (const result of await producer.queue.getResults(ids.slice(first, first + 1_000))) {
          expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1 });
          pids.add(result!.workerIds[0]!.split(':').at(-2)!);
        }
      }
      expect(pids.size).toBe(2);
      await waitUntil('the counts show every run successful', async () => {
        const [counts] = await producer.queue.counts(['default']);
        return counts!.successful === RUNS && counts!.ready + counts!.running === 0;
      });
      console.log(`partitions e2e: ${RUNS} runs drained in ${drainMs} ms by 2 worker processes`);
    } finally {
      await pool?.stop();
      witness.close();
      await producer.close();
    }
  }, 120_000);

  it("loses nothing while one partition's slot moves to another master during a drain", async () => {
    const alias = uniqueAlias('reshard');
    const producer = await Harness.start({ options: { alias, connection: client, partitions: PARTITIONS } });
    const witness = new Witness(alias);
    let pool: WorkerProcess | undefined;
    try {
      const backend = producer.module.get(TaskBackend) as unknown as PartitionedTaskBackend;
      const total = 6_000;
      const ids = (
        await producer.queue.enqueueMany(
          Array.from({ length: total }, () => ({ task: 'WitnessService.work', args: [1] })),
          { atomic: false },
        )
      ).map((run) => run.id);
      pool = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '32'], {
        REDIS_CLUSTER_PORTS: cluster.nodes.map((node) => node.port).join(','),
        THREADMILL_PARTITIONS: String(PARTITIONS),
      });
      await waitUntil('a tenth of the runs completed', async () => (await witness.completed()) >= total / 10, 30_000);
      const slot = keySlot(backend.partitionAliases()[1]!);
      const before = await cluster.owner(slot);
      const target = (await cluster.masters()).find((master) => master !== before)!;
      await cluster.migrate(slot, target);
      expect(await cluster.owner(slot)).toBe(target);
      await waitUntil(
        `${total} runs completed`,
        async () => (await witness.client.hlen(`witness:${alias}:completions`)) === total,
        40_000,
      );
      const completions = await witness.completions();
      expect([...completions.values()].filter((n) => n !== 1)).toEqual([]);
      for (let first = 0; first < total; first += 1_000) {
        for (const result of await producer.queue.getResults(ids.slice(first, first + 1_000))) {
          expect(result?.status).toBe(TaskStatus.SUCCESSFUL);
        }
      }
    } finally {
      await pool?.stop();
      witness.close();
      await producer.close();
    }
  }, 120_000);
});
