import { UnconfirmedEnqueueError, type TaskQueue } from '@threadmill/nestjs';
import type { RedisServer } from '@threadmill/nestjs/testing';
import type { Cluster } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';
import { waitUntil } from '../support/wait.js';

/** A failover within seconds; and a replica that was frozen still stands for election (its data age is not held against it). */
const CLUSTER_ARGS = ['--cluster-node-timeout', '3000', '--cluster-replica-validity-factor', '0'];
/** Big runs, so that what the frozen replica does not read overflows the kernel's socket buffers into the master's. */
const BALLAST = 'x'.repeat(64 * 1024);
/** What the master must hold for its replica beyond the kernel's buffers before the kill: a window of many runs. */
const WINDOW_BYTES = 8 * 1024 * 1024;
/** A live replica acknowledges well within it, on a loaded machine too; calls made while it is frozen wait it out. */
const CONFIRM = { replicas: 1, timeoutMs: 2_000 };
/** Concurrent callers of confirmed enqueues, and the runs they have confirmed when the replica is frozen. */
const CONFIRMED_CALLERS = 4;
const CONFIRMED_BEFORE = 200;

/** What a producer was told, per run. */
interface Told {
  /** Runs an enqueue resolved with. */
  readonly stored: string[];
  /** Runs an `UnconfirmedEnqueueError` named. */
  readonly unconfirmed: string[];
  /** Calls that failed otherwise (Redis unreachable during the failover: stored or not, nobody was told they were). */
  failed: number;
}

/** Enqueues batches of `size` ballast runs until `until.on` turns false, noting what each call said. */
async function produce(queue: TaskQueue, size: number, until: { on: boolean }, told: Told): Promise<void> {
  while (until.on) {
    try {
      const runs = await queue.enqueueMany(
        Array.from({ length: size }, () => ({ task: 'Ballast.carry', args: [BALLAST] })),
      );
      for (const run of runs) told.stored.push(run.id);
    } catch (error) {
      if (error instanceof UnconfirmedEnqueueError) told.unconfirmed.push(...error.unconfirmedIds);
      else told.failed++;
      await delay(20);
    }
  }
}

/** Bytes `master` holds in its output buffer for its replicas (`CLIENT LIST TYPE replica`, `omem`). */
async function heldForReplica(cluster: RedisCluster, master: RedisServer): Promise<number> {
  const list = String(await cluster.command(master, 'CLIENT', 'LIST', 'TYPE', 'replica'));
  return [...list.matchAll(/omem=(\d+)/g)].reduce((sum, [, bytes]) => sum + Number(bytes), 0);
}

describe('fault: kill -9 a master whose replica lags, with and without confirmEnqueues (3 masters, 3 replicas)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start(3, 1, CLUSTER_ARGS);
    client = cluster.client();
  }, 60_000);
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('loses runs it confirmed without confirmation (the window, measured); loses none it confirmed with it', async () => {
    const alias = uniqueAlias('window');
    const slot = keySlot(alias);
    const plain = await Harness.start({ options: { alias, connection: client } });
    const confirming = await Harness.start({ options: { alias, connection: client, confirmEnqueues: CONFIRM } });
    try {
      const master = await cluster.owner(slot);
      const replica = await cluster.replicaOf(master);
      const unconfirmedTold: Told = { stored: [], unconfirmed: [], failed: 0 };
      const confirmedTold: Told = { stored: [], unconfirmed: [], failed: 0 };

      // Confirmed enqueues go on throughout, from concurrent callers: while the replica is live, then frozen,
      // then through the kill.
      const confirmedRun = { on: true };
      const confirmedProducing = Promise.all(
        Array.from({ length: CONFIRMED_CALLERS }, () => produce(confirming.queue, 4, confirmedRun, confirmedTold)),
      );
      await waitUntil('confirmed enqueues succeed', () => confirmedTold.stored.length >= CONFIRMED_BEFORE);

      // The replica stops reading: its socket buffers fill, then the master's output buffer for it.
      replica.pause();
      const plainRun = { on: true };
      const plainProducing = produce(plain.queue, 16, plainRun, unconfirmedTold);
      let held = 0;
      try {
        await waitUntil(
          `the master holds ${WINDOW_BYTES} bytes for its frozen replica`,
          async () => (held = await heldForReplica(cluster, master)) >= WINDOW_BYTES,
          30_000,
        );
      } finally {
        plainRun.on = false;
        await plainProducing;
      }
      const killedAt = Date.now();
      await master.kill('SIGKILL');
      replica.resume();
      await waitUntil(
        'the replica serves the slot',
        async () => (await cluster.owner(slot).catch(() => master)) === replica,
        30_000,
      );
      const failoverMs = Date.now() - killedAt;
      confirmedRun.on = false;
      await confirmedProducing;

      const missing = async (ids: readonly string[]): Promise<string[]> => {
        const lost: string[] = [];
        for (let first = 0; first < ids.length; first += 500) {
          const batch = ids.slice(first, first + 500);
          (await plain.queue.getResults(batch)).forEach((result, i) => result === null && lost.push(batch[i]!));
        }
        return lost;
      };
      const lostUnconfirmed = await missing(unconfirmedTold.stored);
      const lostConfirmed = await missing(confirmedTold.stored);
      const lostNamed = await missing(confirmedTold.unconfirmed);
      console.log(
        `confirmed-enqueue failover: master held ${held} bytes for its frozen replica at the kill; the replica ` +
          `served the slot ${failoverMs} ms after it. Without confirmation: ${unconfirmedTold.stored.length} runs ` +
          `enqueued while the replica was frozen, ${lostUnconfirmed.length} of them lost. With confirmEnqueues ` +
          `${JSON.stringify(CONFIRM)}: ${confirmedTold.stored.length} runs confirmed, ${lostConfirmed.length} lost; ` +
          `${confirmedTold.unconfirmed.length} named by UnconfirmedEnqueueError (${lostNamed.length} of them lost); ` +
          `${confirmedTold.failed} calls refused while the master was away.`,
      );
      // The window: enqueues the master confirmed and its replica never received.
      expect(lostUnconfirmed.length).toBeGreaterThan(0);
      // The bound: every run an enqueue confirmed survived the failover; the others were named.
      expect(confirmedTold.stored.length).toBeGreaterThanOrEqual(CONFIRMED_BEFORE);
      expect(lostConfirmed).toEqual([]);
      expect(confirmedTold.unconfirmed.length).toBeGreaterThan(0);
    } finally {
      await confirming.close();
      await plain.close();
    }
  }, 120_000);
});
