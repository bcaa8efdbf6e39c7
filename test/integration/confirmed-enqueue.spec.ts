import { Test } from '@nestjs/testing';
import {
  TaskStatus,
  ThreadmillConfigError,
  ThreadmillModule,
  UnconfirmedEnqueueError,
  type ThreadmillModuleOptions,
} from '@threadmill/nestjs';
import { ThreadmillClient } from '@threadmill/nestjs/microservices';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplicaConfirmer } from '../../libs/threadmill/src/backend/redis/confirm/replica-confirmer.js';
import { RedisKeys } from '../../libs/threadmill/src/backend/redis/redis-keys.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';
import { command } from '../support/redis-command.js';
import { ReplicatedRedis, waitCalls, whileFrozen } from '../support/redis-replicated.js';
import { waitUntil } from '../support/wait.js';

/**
 * Long enough that a live replica always acknowledges, on a loaded machine
 * too (a WAIT returns as soon as it has); a frozen one makes a call wait it
 * out, so the calls that meet one are made together.
 */
const CONFIRM = { replicas: 1, timeoutMs: 5_000 };

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe('confirmEnqueues on a standalone master with a replica', () => {
  let redis: ReplicatedRedis;
  const apps: Harness[] = [];
  beforeAll(async () => {
    redis = await ReplicatedRedis.start();
  }, 30_000);
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis?.stop();
  });

  async function producer(options: ThreadmillModuleOptions = {}): Promise<Harness> {
    const app = await Harness.start({
      options: { connection: redis.master.url, confirmEnqueues: CONFIRM, ...options },
    });
    apps.push(app);
    return app;
  }

  /** Whether the replica holds run `id` in its fresh records, right now. */
  async function onReplica(alias: string, id: string): Promise<boolean> {
    return (await command(redis.replica, 'HEXISTS', new RedisKeys(alias).fresh, id)) === 1;
  }

  it('is off by default: no connection of its own and no WAIT', async () => {
    const waits = await waitCalls(redis.master);
    const app = await producer({ confirmEnqueues: undefined });
    await app.queue.enqueue('WitnessService.work', [1]);
    await app.queue.enqueueMany([{ task: 'WitnessService.work', args: [1] }]);
    expect(String(await command(redis.master, 'CLIENT', 'LIST'))).not.toMatch(/name=\S*:confirm/);
    expect(await waitCalls(redis.master)).toBe(waits);
  });

  it('resolves an enqueue once the replica holds its runs, over a connection of its own', async () => {
    const app = await producer();
    const run = await app.queue.enqueue('WitnessService.work', [1], { id: uniqueAlias('run') });
    expect(await onReplica(app.alias, run.id)).toBe(true);
    const many = await app.queue.enqueueMany(
      Array.from({ length: 5 }, () => ({ task: 'WitnessService.work', args: [1] })),
    );
    for (const { id } of many) expect(await onReplica(app.alias, id)).toBe(true);
    expect(String(await command(redis.master, 'CLIENT', 'LIST'))).toMatch(/name=threadmill:\S+:confirm /);
  });

  it('shares one WAIT among concurrent stores (group commit)', async () => {
    const app = await producer();
    await app.queue.enqueue('WitnessService.work', [1]);
    const waits = await waitCalls(redis.master);
    const runs = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        i % 3 === 0
          ? app.queue.enqueueMany([
              { task: 'WitnessService.work', args: [1] },
              { task: 'WitnessService.work', args: [2] },
            ])
          : app.queue.enqueue('WitnessService.work', [1]),
      ),
    );
    const ids = runs.flat().map((run) => run.id);
    expect(ids).toHaveLength(400);
    const sent = (await waitCalls(redis.master)) - waits;
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeLessThan(30);
    for (const id of ids.slice(0, 20)) expect(await onReplica(app.alias, id)).toBe(true);

    // Ten script calls in a row (chunks of 128), each answered before the next WAIT: fewer WAITs than calls.
    const before = await waitCalls(redis.master);
    const chunked = await app.queue.enqueueMany(
      Array.from({ length: 1_280 }, () => ({ task: 'WitnessService.work', args: [1] })),
      { atomic: false },
    );
    const chunkWaits = (await waitCalls(redis.master)) - before;
    console.log(
      `group commit: 300 concurrent calls (400 runs) confirmed by ${sent} WAIT(s); ` +
        `10 chunks of an enqueueMany by ${chunkWaits}`,
    );
    expect(chunkWaits).toBeLessThan(10);
    for (const { id } of [chunked[0]!, chunked.at(-1)!]) expect(await onReplica(app.alias, id)).toBe(true);
  });

  it('with the replica stopped, throws UnconfirmedEnqueueError naming the stored runs; a retry by id confirms them', async () => {
    const app = await producer();
    await app.queue.enqueue('WitnessService.work', [1]);
    const id = uniqueAlias('lagging');
    const ids = [uniqueAlias('a'), uniqueAlias('b')];
    // Made together, so coalesced into one store: each caller is told about its own runs only.
    const [single, many, concurrent] = await whileFrozen(redis.replica, () =>
      Promise.all([
        rejection(app.queue.enqueue('WitnessService.work', [1], { id })),
        rejection(app.queue.enqueueMany(ids.map((runId) => ({ task: 'WitnessService.work', args: [1], id: runId })))),
        Promise.all(
          ['c', 'd'].map((label) => rejection(app.queue.enqueue('WitnessService.work', [1], { id: `${id}-${label}` }))),
        ),
      ]),
    );
    expect(single).toBeInstanceOf(UnconfirmedEnqueueError);
    expect(single).toMatchObject({
      runIds: [id],
      unconfirmedIds: [id],
      acknowledged: 0,
      replicas: 1,
      timeoutMs: CONFIRM.timeoutMs,
    });
    expect((single as Error).message).toMatch(/are stored on the Redis master, but 0 of the 1 replica\(s\)/);
    expect((single as Error).message).toMatch(/enqueue them again with the same `id`/);
    expect(many).toMatchObject({ runIds: ids, unconfirmedIds: ids });
    expect((concurrent as unknown[]).map((error) => (error as UnconfirmedEnqueueError).runIds)).toEqual([
      [`${id}-c`],
      [`${id}-d`],
    ]);

    // Stored on the master all the same: nothing undone.
    const stored = await app.queue.getResults([id, ...ids, `${id}-c`, `${id}-d`]);
    expect(stored.map((result) => result?.status)).toEqual(Array(5).fill(TaskStatus.READY));

    const counts = async () => (await app.queue.counts(['default']))[0]!.ready;
    const before = await counts();
    const again = await app.queue.enqueue('WitnessService.work', [1], { id });
    expect(again.id).toBe(id);
    expect(await onReplica(app.alias, id)).toBe(true);
    expect(await counts()).toBe(before);
  });

  it('confirms nothing when the connection of confirmed stores drops under a WAIT, and confirms again once back', async () => {
    const app = await producer();
    await app.queue.enqueue('WitnessService.work', [1]);
    const id = uniqueAlias('dropped');
    const error = await whileFrozen(redis.replica, async () => {
      const storing = rejection(app.queue.enqueue('WitnessService.work', [1], { id }));
      // The store ran; its WAIT blocks on the frozen replica when the connection is killed.
      await waitUntil('the WAIT blocks', async () =>
        ((await command(redis.master, 'CLIENT', 'LIST')) as string).includes(' cmd=wait '),
      );
      await command(redis.master, 'CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      return storing;
    });
    expect(error).toBeInstanceOf(UnconfirmedEnqueueError);
    expect(error).toMatchObject({ unconfirmedIds: [id], acknowledged: 0 });
    expect((error as Error).message).toMatch(/the confirmation failed: /);
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.READY);
    await waitUntil('the producer reconnected', async () => {
      const run = await app.queue.enqueue('WitnessService.work', [1]).catch(() => undefined);
      return run !== undefined && (await onReplica(app.alias, run.id));
    });
  });

  it('never lets a WAIT on a new socket confirm a store sent on the old one', async () => {
    const connection = new Redis(redis.master.url, { enableOfflineQueue: false });
    try {
      await waitUntil('connected', async () => connection.status === 'ready');
      const confirmer = new ReplicaConfirmer(connection, 1, CONFIRM.timeoutMs);
      const socket = connection.stream;
      await connection.set(uniqueAlias('key'), '1');
      expect(await confirmer.confirm(socket)).toEqual({ acknowledged: 1 });
      // The same client, reconnected: a WAIT there would answer at once, having written nothing.
      connection.disconnect(true);
      await waitUntil('reconnected', async () => connection.status === 'ready' && connection.stream !== socket);
      const waits = await waitCalls(redis.master);
      expect(await confirmer.confirm(socket)).toMatchObject({ acknowledged: 0 });
      expect(await waitCalls(redis.master)).toBe(waits);
    } finally {
      connection.disconnect();
    }
  });

  it('throws one UnconfirmedEnqueueError for an enqueueMany of several chunks (atomic: false)', async () => {
    const app = await producer();
    await app.queue.enqueue('WitnessService.work', [1]);
    const error = await whileFrozen(redis.replica, () =>
      rejection(
        app.queue.enqueueMany(
          Array.from({ length: 300 }, () => ({ task: 'WitnessService.work', args: [1] })),
          { atomic: false },
        ),
      ),
    );
    expect(error).toBeInstanceOf(UnconfirmedEnqueueError);
    const { runIds, unconfirmedIds } = error as UnconfirmedEnqueueError;
    expect(runIds).toHaveLength(300);
    expect(new Set(unconfirmedIds)).toEqual(new Set(runIds));
    expect((await app.queue.getResults(runIds)).every((result) => result?.status === TaskStatus.READY)).toBe(true);
  });

  it("confirms a ThreadmillClient's emit", async () => {
    const client = new ThreadmillClient({
      connection: redis.master.url,
      alias: uniqueAlias('client'),
      queues: FIXTURE_QUEUES,
      confirmEnqueues: CONFIRM,
    });
    try {
      const run = await firstValueFrom(client.emit('WitnessService.work', 1));
      expect(run.status).toBe(TaskStatus.READY);
      const error = await whileFrozen(redis.replica, () =>
        rejection(firstValueFrom(client.emit('WitnessService.work', 1))),
      );
      expect(error).toBeInstanceOf(UnconfirmedEnqueueError);
    } finally {
      await client.close();
    }
  });

  it('warns at boot when the master has fewer replicas connected than asked for', async () => {
    const logger = new CapturedLogger();
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({
          connection: redis.master.url,
          alias: uniqueAlias(),
          queues: FIXTURE_QUEUES,
          confirmEnqueues: { replicas: 2 },
        }),
        FixtureTasksModule,
      ],
    }).compile();
    module.useLogger(logger);
    await module.init();
    await module.close();
    expect(logger.warnings().join('\n')).toMatch(
      new RegExp(
        `confirmEnqueues asks for 2 replica\\(s\\), but the Redis master at 127.0.0.1:${redis.master.port}/0 has 1 ` +
          'connected: until more connect, every enqueue it stores throws UnconfirmedEnqueueError after 1000 ms',
      ),
    );
  });

  it('refuses a bad confirmEnqueues at boot, naming the value', async () => {
    const cases: [unknown, string][] = [
      [true, 'true; confirmEnqueues must be false (the default) or { replicas, timeoutMs? }'],
      [{ replicas: 0 }, '{ replicas: 0 }; confirmEnqueues.replicas must be a whole number from 1 to 100, got 0'],
      [{ replicas: 1, timeoutMs: 0 }, 'confirmEnqueues.timeoutMs must be a whole number of ms from 1 to 60000, got 0'],
      [{ replicas: 1, timeout: 5 }, 'confirmEnqueues has an unknown field "timeout"'],
    ];
    for (const [value, problem] of cases) {
      const error = await Harness.start({
        options: { connection: redis.master.url, confirmEnqueues: value as ThreadmillModuleOptions['confirmEnqueues'] },
      }).then(
        (app) => app.close().then(() => undefined),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ThreadmillConfigError);
      expect((error as Error).message).toContain(problem);
    }
  });
});
