import { TaskBackend, TaskStatus, UnconfirmedEnqueueError, type ThreadmillModuleOptions } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionedTaskBackend } from '../../libs/threadmill/src/backend/partitioned/partitioned.backend.js';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { RedisKeys } from '../../libs/threadmill/src/backend/redis/redis-keys.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { waitCalls, whileFrozen } from '../support/redis-replicated.js';

/**
 * Long enough that a live replica always acknowledges, on a loaded machine
 * too (a WAIT returns as soon as it has); a frozen one makes a call wait it
 * out, so the calls that meet one are made together.
 */
const CONFIRM = { replicas: 1, timeoutMs: 5_000 };

describe('confirmEnqueues on a Redis Cluster (3 masters, a replica each)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  const apps: Harness[] = [];
  beforeAll(async () => {
    cluster = await RedisCluster.start(3, 1);
    client = cluster.client();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    client?.disconnect();
    await cluster?.stop();
  });

  async function producer(options: ThreadmillModuleOptions): Promise<Harness> {
    const app = await Harness.start({ options: { connection: client, confirmEnqueues: CONFIRM, ...options } });
    apps.push(app);
    return app;
  }

  it("confirms each partition's share by its own master: a master whose replica is stopped leaves only its runs unconfirmed", async () => {
    const app = await producer({ alias: uniqueAlias('parts'), partitions: 6 });
    const backend = app.module.get(TaskBackend) as unknown as PartitionedTaskBackend;
    const confirmed = await app.queue.enqueueMany(
      Array.from({ length: 12 }, () => ({ task: 'WitnessService.work', args: [1] })),
    );
    expect(confirmed).toHaveLength(12);
    const masters = await cluster.masters();
    const masterOf = async (id: string) =>
      cluster.owner(keySlot(backend.partitionAliases()[backend.partitionOfRun(id)]!));
    const lagging = await cluster.owner(keySlot(backend.partitionAliases()[1]!));
    const waits = await Promise.all(masters.map((master) => waitCalls(master)));

    // A key of a partition on another master, and one of a partition on the lagging one.
    const keys = Array.from({ length: 200 }, (_, i) => `key-${i}`);
    const homes = await Promise.all(keys.map((key) => masterOf(backend.newRunId(key))));
    const elsewhere = keys.find((_, i) => homes[i] !== lagging)!;
    const there = keys.find((_, i) => homes[i] === lagging)!;

    const replica = await cluster.replicaOf(lagging);
    const { error, other, mixed } = await whileFrozen(replica, async () => {
      // Its rejection is caught at once: it may come before the two enqueues below settle.
      const many = app.queue
        .enqueueMany(Array.from({ length: 60 }, () => ({ task: 'WitnessService.work', args: [1] })))
        .catch((e: unknown) => e);
      // Coalesced into one store with each other: a call of runs on confirmed masters only resolves.
      const [apart, together] = await Promise.allSettled([
        app.queue.enqueue('WitnessService.work', [1], { partitionKey: elsewhere }),
        app.queue.enqueue('WitnessService.work', [1], { partitionKey: there }),
      ]);
      return { error: await many, other: apart, mixed: together };
    });
    expect(other.status).toBe('fulfilled');
    expect(mixed.status).toBe('rejected');
    expect((mixed as PromiseRejectedResult).reason).toBeInstanceOf(UnconfirmedEnqueueError);

    expect(error).toBeInstanceOf(UnconfirmedEnqueueError);
    const { runIds, unconfirmedIds, acknowledged } = error as UnconfirmedEnqueueError;
    expect(runIds).toHaveLength(60);
    expect(acknowledged).toBe(0);
    const onLagging: string[] = [];
    for (const id of runIds) if ((await masterOf(id)) === lagging) onLagging.push(id);
    expect(onLagging.length).toBeGreaterThan(0);
    expect(new Set(unconfirmedIds)).toEqual(new Set(onLagging));
    expect((await app.queue.getResults(runIds)).every((result) => result?.status === TaskStatus.READY)).toBe(true);
    // Every master that stored a share sent a WAIT for it.
    const after = await Promise.all(masters.map((master) => waitCalls(master)));
    expect(after.every((count, i) => count > waits[i]!)).toBe(true);
  });

  it('follows a slot that moved to another master and is confirmed by that master, never by the old one', async () => {
    const alias = uniqueAlias('moved');
    const slot = keySlot(alias);
    const app = await producer({ alias });
    await app.queue.enqueue('WitnessService.work', [1]);
    const source = await cluster.owner(slot);
    const target = (await cluster.masters()).find((master) => master !== source)!;
    const targetReplica = await cluster.replicaOf(target);
    const id = uniqueAlias('run');
    // The old master's replica is live: a WAIT sent to it would confirm.
    const error = await whileFrozen(targetReplica, async () => {
      await cluster.migrate(slot, target);
      return app.queue.enqueue('WitnessService.work', [1], { id }).catch((e: unknown) => e);
    });
    expect(error).toBeInstanceOf(UnconfirmedEnqueueError);
    expect(error).toMatchObject({ unconfirmedIds: [id], acknowledged: 0 });
    expect(await cluster.command(target, 'HEXISTS', new RedisKeys(alias).fresh, id)).toBe(1);
    // Once the new master's replica is back, the same id confirms the stored run, without storing it twice.
    expect((await app.queue.enqueue('WitnessService.work', [1], { id })).id).toBe(id);
    expect((await app.queue.counts(['default']))[0]!.ready).toBe(2);
  });

  it('waits out a migration under way (ASK, TRYAGAIN) and is confirmed by the master that stored the run', async () => {
    const alias = uniqueAlias('migrating');
    const slot = keySlot(alias);
    const app = await producer({ alias });
    await app.queue.enqueue('WitnessService.work', [1]);
    const source = await cluster.owner(slot);
    const target = (await cluster.masters()).find((master) => master !== source)!;
    const targetId = await cluster.startMigration(slot, target);
    const id = uniqueAlias('run');
    let settled = false;
    const storing = app.queue.enqueue('WitnessService.work', [1], { id }).finally(() => (settled = true));
    await delay(300);
    // The source no longer has the keys, and the target lacks some of those the script declares: refused so far.
    expect(settled).toBe(false);
    const waits = await waitCalls(target);
    await cluster.finishMigration(slot, targetId);
    expect((await storing).id).toBe(id);
    expect(await waitCalls(target)).toBeGreaterThan(waits);
    expect(await cluster.command(target, 'HEXISTS', new RedisKeys(alias).fresh, id)).toBe(1);
    expect((await app.queue.counts(['default']))[0]!.ready).toBe(2);
  });
});
