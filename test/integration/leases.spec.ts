import { AcknowledgementTimeoutError, TaskStatus } from '@threadmill/nestjs';
import type { Acknowledgement } from '../../libs/threadmill/src/backend/task-backend.js';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { LeaseKeeper } from '../../libs/threadmill/src/worker/lease-keeper.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { FailService, MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const LEASE_MS = 200;
const BROKER_SETTINGS = { queues: ['default'], intervalMs: 1_000, claimTtlMs: 5_000, maxRecoveries: 3 };
const ERROR = { errorClass: 'Error', message: 'boom', stack: 'Error: boom', attempt: 1 };
const HEARTBEAT = { id: 'host:1:0', queues: ['default'], concurrency: 1, startedAt: 0, done: 0, held: 1 };

describe('leases, the reaper and fencing', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function producer(): Promise<{ app: Harness; broker: Broker }> {
    const app = await Harness.start({ options: { leaseTtlMs: LEASE_MS } });
    apps.push(app);
    const registry = app.module.get(TaskRegistry);
    const broker = new Broker(app.backend, new TaskExecutor(registry), BROKER_SETTINGS);
    return { app, broker };
  }

  it('hands a lease that expired before its attempt started back to READY, uncharged', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await delay(LEASE_MS + 50);
    await broker.pass();
    const result = await app.queue.getResult(id);
    expect(result).toMatchObject({ status: TaskStatus.READY, attempts: 0, errors: [] });
    expect(broker.reaped).toBe(0);
    // Its place in the queue is kept, and its next claim is its first attempt.
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again).toMatchObject({ id, attempts: 1, workerIds: ['host:2:0'] });
    expect(again!.token).not.toBe(leased!.token);
    // Whose holder may have started it before dying: it runs alone from now on.
    expect(again!.recoveries).toBe(1);
  });

  it('hands an expired lease to the retry policy as AcknowledgementTimeoutError', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(FailService, 'flaky', [0]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(leased!.id).toBe(id);
    expect(leased!.deadline - leased!.claimedAt).toBe(LEASE_MS);
    // Its holder started the attempt: a start mark rides on an acknowledgement call.
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);

    await broker.pass();
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.RUNNING); // not expired yet

    await delay(LEASE_MS + 50);
    await broker.pass();
    const retried = await app.queue.getResult(id);
    expect(retried.status).toBe(TaskStatus.READY);
    expect(retried.runAfter).not.toBeNull();
    expect(retried.errors).toEqual([
      expect.objectContaining({
        errorClass: 'AcknowledgementTimeoutError',
        attempt: 1,
        message: expect.stringMatching(/by worker host:1:0/),
      }),
    ]);
    expect(broker.reaped).toBe(1);

    await delay(80); // the backoff (50 ms) runs out
    await broker.pass();
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again!.id).toBe(id);
    expect(again!.attempts).toBe(2);
    expect(again!.workerIds).toEqual(['host:1:0', 'host:2:0']);
  });

  it('finishes an expired lease FAILED when the task has no retry policy', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
    await delay(LEASE_MS + 50);
    await broker.pass();
    const result = await app.queue.getResult(id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.errors[0]!.errorClass).toBe(AcknowledgementTimeoutError.name);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ running: 0, failed: 1 });
  });

  it('discards a stale acknowledgement from an expired lease and counts it', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await app.backend.acknowledge([], [leased!]);
    await delay(LEASE_MS + 50);
    await broker.pass();

    const applied = await app.backend.acknowledge([
      { id, queue: 'default', token: leased!.token, outcome: { kind: 'successful', returnValue: '2' } },
    ]);
    expect(applied).toEqual([false]);
    const result = await app.queue.getResult(id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.returnValue).toBeUndefined();
    const stats = await app.backend.connections.client.hgetall(app.backend.keys.stats('default'));
    expect(stats['staleAcks']).toBe('1');
  });

  it('lets several brokers reap at once, settling each expired run exactly once', async () => {
    const { app, broker } = await producer();
    const registry = app.module.get(TaskRegistry);
    const brokers = [
      broker,
      ...Array.from({ length: 3 }, () => new Broker(app.backend, new TaskExecutor(registry), BROKER_SETTINGS)),
    ];
    const runs = await app.queue.enqueueMany(
      Array.from({ length: 40 }, () => ({ task: 'FailService.flaky', args: [0] })),
    );
    await app.backend.acknowledge([], await app.backend.claim(['default'], 40, 'host:1:0', 0));
    await delay(LEASE_MS + 50);
    await Promise.all(brokers.map((b) => b.pass()));
    expect(brokers.reduce((sum, b) => sum + b.reaped, 0)).toBe(40);
    for (const result of await app.queue.getResults(runs.map((r) => r.id))) {
      expect(result).toMatchObject({ status: TaskStatus.READY, attempts: 1 });
      expect(result!.errors).toHaveLength(1);
    }
  });

  it('refuses an acknowledgement and a renewal after the deadline, even before the reaper ran', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await delay(LEASE_MS + 50);
    const lease = { id, queue: 'default', token: leased!.token, leaseTtlMs: LEASE_MS };
    expect(await app.backend.renew(HEARTBEAT, 1_000, [lease])).toEqual(['lost']);
    expect(await app.backend.acknowledge([{ ...lease, outcome: { kind: 'successful', returnValue: '2' } }])).toEqual([
      false,
    ]);
    expect(await app.backend.release([lease])).toEqual([false]);
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.RUNNING); // left for the reaper
  });

  it('refuses only the expired lease of a batch that mixes it with live ones', async () => {
    const { app } = await producer();
    const { id: late } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [expired] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await delay(LEASE_MS + 50);
    const { id: live } = await app.queue.enqueue(MathService, 'add', [2, 2]);
    const [held] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(held!.id).toBe(live);
    const ack = (run: typeof held, returnValue: string) => ({
      id: run!.id,
      queue: 'default',
      token: run!.token,
      outcome: { kind: 'successful' as const, returnValue },
    });
    expect(await app.backend.acknowledge([ack(expired, '2'), ack(held, '4')])).toEqual([false, true]);
    expect((await app.queue.getResult(late)).status).toBe(TaskStatus.RUNNING); // left for the reaper
    expect((await app.queue.getResult(live)).returnValue).toBe(4);
  });

  it('applies an acknowledgement only once', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const ack = {
      id,
      queue: 'default',
      token: leased!.token,
      outcome: { kind: 'successful' as const, returnValue: '2' },
    };
    expect(await app.backend.acknowledge([ack])).toEqual([true]);
    expect(await app.backend.acknowledge([ack])).toEqual([false]);
    expect((await app.queue.getResult(id)).returnValue).toBe(2);
  });

  it('applies one of two outcomes for the same lease sent in one batch', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const base = { id, queue: 'default', token: leased!.token };
    const stats = async () => app.backend.stats('default');
    const before = await stats();
    expect(
      await app.backend.acknowledge([
        { ...base, outcome: { kind: 'successful', returnValue: '2' } },
        { ...base, outcome: { kind: 'retry', error: ERROR, delayMs: 0 } },
      ]),
    ).toEqual([true, false]);
    const result = await app.queue.getResult(id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.attempts).toBe(1);
    const after = await stats();
    expect((after['succeeded'] ?? 0) - (before['succeeded'] ?? 0)).toBe(1);
    expect((after['retried'] ?? 0) - (before['retried'] ?? 0)).toBe(0);
    expect((after['staleAcks'] ?? 0) - (before['staleAcks'] ?? 0)).toBe(1);
  });

  it('applies a mixed batch item by item: plain successes grouped per queue and token around other outcomes', async () => {
    const { app } = await producer();
    const add = (queue: string) => app.queue.enqueue(MathService, 'add', [1, 1], { queue });
    const runs = [await add('default'), await add('default'), await add('default'), await add('emails')];
    runs.push(await add('default'), await add('default'));
    const leased = new Map(
      (await app.backend.claim(['default', 'emails'], 10, 'host:1:0', 0)).map((run) => [run.id, run]),
    );
    expect(leased.size).toBe(6);
    const ack = (i: number, outcome: Acknowledgement['outcome'], token = leased.get(runs[i]!.id)!.token) => ({
      id: runs[i]!.id,
      queue: runs[i]!.queue,
      token,
      outcome,
    });
    const plain = { kind: 'successful', returnValue: undefined } as const;
    const applied = await app.backend.acknowledge([
      ack(0, plain),
      ack(0, plain), // the same lease again, inside its group: stale
      ack(1, plain, 'not-its-token'), // stale: a group of its own
      ack(2, plain),
      ack(3, plain), // another queue: a group of its own
      ack(4, { kind: 'successful', returnValue: '2' }),
      ack(5, { kind: 'failed', error: ERROR }),
    ]);
    expect(applied).toEqual([true, false, false, true, true, true, true]);
    const statuses = await Promise.all(runs.map(async ({ id }) => (await app.queue.getResult(id)).status));
    expect(statuses).toEqual([
      TaskStatus.SUCCESSFUL,
      TaskStatus.RUNNING,
      TaskStatus.SUCCESSFUL,
      TaskStatus.SUCCESSFUL,
      TaskStatus.SUCCESSFUL,
      TaskStatus.FAILED,
    ]);
    expect((await app.queue.getResult(runs[4]!.id)).returnValue).toBe(2);
    expect(await app.queue.counts(['default', 'emails'])).toEqual([
      expect.objectContaining({ queue: 'default', running: 1, successful: 3, failed: 1 }),
      expect.objectContaining({ queue: 'emails', running: 0, successful: 1 }),
    ]);
  });

  it('keeps a renewed lease past its TTL', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    // Renewed at once for 1.5 s, then a third of that apart: a loaded machine
    // may delay a renewal by a second without the lease lapsing (the file's
    // 200 ms lease lapsed once between two renewals under a busy run); the
    // renewals outlast the claim's own 200 ms and two renewal lengths.
    const renewedFor = 1_500;
    const lease = { id, queue: 'default', token: leased!.token, leaseTtlMs: renewedFor };
    for (let i = 0; i < 7; i++) {
      if (i > 0) await delay(renewedFor / 3);
      expect(await app.backend.renew(HEARTBEAT, 1_000, [lease])).toEqual(['held']);
      await broker.pass();
    }
    expect(broker.reaped).toBe(0);
    expect(await app.backend.acknowledge([{ ...lease, outcome: { kind: 'successful', returnValue: '2' } }])).toEqual([
      true,
    ]);
  });

  it('renews exactly the leases its keeper still holds, whichever of them were dropped', async () => {
    // A lease of its own, longer than the file's: under a full parallel test
    // run a 200 ms lease could lapse between two renewals (all five expired).
    const lease = 1_000;
    const app = await Harness.start({ options: { leaseTtlMs: lease } });
    apps.push(app);
    for (let i = 0; i < 5; i++) await app.queue.enqueue(MathService, 'add', [i, 1]);
    const runs = await app.backend.claim(['default'], 5, 'host:1:0', 0);
    expect(runs).toHaveLength(5);
    const keeper = new LeaseKeeper(app.backend, lease / 4, () => HEARTBEAT);
    const leases = runs.map((run) => keeper.hold(run, lease, performance.now()));
    // The first, a middle one and the last: each end of the keeper's list, and its inside.
    for (const i of [0, 2, 4]) keeper.drop(leases[i]!);
    keeper.drop(leases[2]!); // twice: harmless
    expect(keeper.size).toBe(2);
    keeper.start();
    await delay(lease * 3);
    await keeper.stop();
    keeper.abortAll(new Error('stop'));
    expect(leases.map((held) => held.signal.aborted)).toEqual([false, true, false, true, false]);
    const outcome = { kind: 'successful', returnValue: '1' } as const;
    const applied = await app.backend.acknowledge(runs.map(({ id, queue, token }) => ({ id, queue, token, outcome })));
    // Only the leases still held outlived their TTL.
    expect(applied).toEqual([false, true, false, true, false]);
  });

  it('runs a task three times longer than its lease once, renewing the lease', async () => {
    const app = await Harness.start({ options: { leaseTtlMs: 300, brokerIntervalMs: 50 }, worker: { concurrency: 1 } });
    apps.push(app);
    const { id } = await app.queue.enqueue(SlowService, 'sleep', [900]);
    const result = await app.waitFor(id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.returnValue).toMatchObject({ aborted: false });
    expect(result.attempts).toBe(1);
    expect(result.errors).toEqual([]);
  });

  it('aborts the attempt of a worker that lost its lease, and discards its outcome', async () => {
    const app = await Harness.start({
      options: { leaseTtlMs: 300, brokerIntervalMs: 5_000 },
      worker: { concurrency: 1 },
    });
    apps.push(app);
    const { id } = await app.queue.enqueue(SlowService, 'sleep', [5_000]);
    await app.waitFor(id, (r) => r.status === TaskStatus.RUNNING);
    // RUNNING is read from Redis, as soon as the lease is written: the worker
    // holds the run once its claim's reply arrived.
    await waitUntil('the worker holds the run', () => app.worker.held === 1, 3_000);
    // Another party takes the run over (as the reaper would): the worker's next renewal fails.
    const client = app.backend.connections.client;
    const lease = (await client.hget(app.backend.keys.leases, id))!;
    await client.hset(app.backend.keys.leases, id, lease.replace(/^[^|]+/, 'taken-over'));
    const deadline = Date.now() + 3_000;
    while (app.worker.held > 0 && Date.now() < deadline) await delay(20);
    expect(app.worker.held).toBe(0); // the attempt stopped long before its 5 s
    const result = await app.queue.getResult(id);
    expect(result.status).toBe(TaskStatus.RUNNING); // its outcome was not applied
    const stats = await app.backend.connections.client.hgetall(app.backend.keys.stats('default'));
    expect(stats['staleAcks']).toBe('1');
  });

  it('leases each run for its own lease length, whether it is read from its fresh record or its run hash', async () => {
    const { app } = await producer();
    const payload = JSON.stringify({ v: 1, task: 'math.add', queue: 'default', priority: 0, args: [1, 2] });
    const run = { queue: 'default', priority: 0, runAt: 0, delayMs: 0, payload, idempotent: false };
    const { now } = await app.backend.store([
      { ...run, id: 'long', leaseTtlMs: 5_000 },
      { ...run, id: 'default', leaseTtlMs: 0 },
    ]);
    const claimed = await app.backend.claim(['default'], 2, 'host:1:0', 0);
    expect(claimed.map((r) => [r.id, r.deadline - r.claimedAt, r.payload, r.attempts])).toEqual([
      ['long', 5_000, payload, 1],
      ['default', LEASE_MS, payload, 1],
    ]);
    expect(claimed[0]!.enqueuedAt).toBe(now);
    // Redis holds the same deadlines: the reaper reads them from the running set.
    const running = app.backend.keys.running('default');
    const deadlines = await app.backend.connections.client.zmscore(running, 'long', 'default');
    expect(deadlines.map(Number)).toEqual([claimed[0]!.claimedAt + 5_000, claimed[1]!.claimedAt + LEASE_MS]);
    // One token fences every lease of a claim; the next claim mints another.
    expect(claimed[1]!.token).toBe(claimed[0]!.token);

    // A retry settles the first attempt into the run hash; the next claim reads it from there.
    const [applied] = await app.backend.acknowledge([
      { id: 'long', queue: 'default', token: claimed[0]!.token, outcome: { kind: 'retry', error: ERROR, delayMs: 0 } },
    ]);
    expect(applied).toBe(true);
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect([again!.id, again!.deadline - again!.claimedAt, again!.payload, again!.attempts]).toEqual([
      'long',
      5_000,
      payload,
      2,
    ]);
    expect(again!.enqueuedAt).toBe(now);
    expect(again!.token).not.toBe(claimed[0]!.token);
    expect(again!.workerIds).toEqual(['host:1:0', 'host:2:0']);
    expect(again!.errors).toEqual([ERROR]);
  });
});
