import { TaskStatus, UnconfirmedEnqueueError, type TaskQueue } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { ReplicatedRedis, whileFrozen } from '../support/redis-replicated.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/**
 * Long enough that a live replica always acknowledges, on a loaded machine
 * too (a WAIT returns as soon as it has); only the call made while the
 * replica is frozen waits it out.
 */
const CONFIRM = { replicas: 1, timeoutMs: 5_000 };

/** Enqueues `total` witness runs from `callers` concurrent loops, one run or a batch of 10 a call; their ids. */
async function enqueueConcurrently(queues: readonly TaskQueue[], total: number, callers: number): Promise<string[]> {
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      const queue = queues[c % queues.length]!;
      for (let call = 0; ids.length < total; call++) {
        if (call % 2 === 0) ids.push((await queue.enqueue('WitnessService.work', [1])).id);
        else {
          const runs = await queue.enqueueMany(
            Array.from({ length: 10 }, () => ({ task: 'WitnessService.work', args: [1] })),
          );
          for (const run of runs) ids.push(run.id);
        }
      }
    }),
  );
  return ids;
}

/** Waits until the witness saw every run of `ids` complete, then checks each completed exactly once and SUCCESSFUL. */
async function expectDrainedOnce(witness: Witness, queue: TaskQueue, alias: string, ids: string[]): Promise<void> {
  await waitUntil(
    `${ids.length} runs completed`,
    async () => (await witness.client.hlen(`witness:${alias}:completions`)) >= ids.length,
    40_000,
  );
  const completions = await witness.completions();
  expect(new Set(completions.keys())).toEqual(new Set(ids));
  expect([...completions.values()].filter((n) => n !== 1)).toEqual([]);
  for (let first = 0; first < ids.length; first += 1_000) {
    for (const result of await queue.getResults(ids.slice(first, first + 1_000))) {
      expect(result?.status).toBe(TaskStatus.SUCCESSFUL);
    }
  }
}

describe('e2e: confirmed enqueues on a Redis Cluster with replicas, drained by worker processes', () => {
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

  it('confirms every enqueue of two producers over six partitions, and the pool runs each run once', async () => {
    const alias = uniqueAlias('confirmed');
    const options = { alias, connection: client, partitions: 6, confirmEnqueues: CONFIRM };
    const producers = [await Harness.start({ options }), await Harness.start({ options })];
    const witness = new Witness(alias);
    let pool: WorkerProcess | undefined;
    try {
      const startedAt = performance.now();
      const ids = await enqueueConcurrently(
        producers.map((producer) => producer.queue),
        3_000,
        16,
      );
      const seconds = (performance.now() - startedAt) / 1000;
      console.log(`confirmed enqueues (cluster, 6 partitions): ${ids.length} runs in ${seconds.toFixed(2)} s`);
      expect(new Set(ids).size).toBe(ids.length);
      pool = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '32'], {
        REDIS_CLUSTER_PORTS: cluster.nodes.map((node) => node.port).join(','),
        THREADMILL_PARTITIONS: '6',
      });
      await expectDrainedOnce(witness, producers[0]!.queue, alias, ids);
    } finally {
      await pool?.stop();
      witness.close();
      await Promise.all(producers.map((producer) => producer.close()));
    }
  }, 120_000);
});

describe('e2e: confirmed enqueues on a standalone master with a replica, drained by a worker process', () => {
  let redis: ReplicatedRedis;
  beforeAll(async () => {
    redis = await ReplicatedRedis.start();
  }, 30_000);
  afterAll(async () => {
    await redis?.stop();
  });

  it('confirms enqueues; one refused while the replica is frozen is confirmed by its retry; each run runs once', async () => {
    const alias = uniqueAlias('confirmed-1');
    const producer = await Harness.start({
      options: { alias, connection: redis.master.url, confirmEnqueues: CONFIRM },
    });
    const witness = new Witness(alias);
    let pool: WorkerProcess | undefined;
    try {
      const ids = await enqueueConcurrently([producer.queue], 1_000, 8);
      const id = uniqueAlias('retried');
      const refused = await whileFrozen(redis.replica, () =>
        producer.queue.enqueue('WitnessService.work', [1], { id }).catch((error: unknown) => error),
      );
      expect(refused).toBeInstanceOf(UnconfirmedEnqueueError);
      expect((await producer.queue.enqueue('WitnessService.work', [1], { id })).id).toBe(id);
      pool = WorkerProcess.start(alias, ['--workers', '1', '--concurrency', '16'], {
        REDIS_URL: redis.master.url,
        WITNESS_URL: redisUrl(),
      });
      await expectDrainedOnce(witness, producer.queue, alias, [...ids, id]);
    } finally {
      await pool?.stop();
      witness.close();
      await producer.close();
    }
  }, 90_000);
});
