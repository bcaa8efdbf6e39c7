import { AcknowledgementTimeoutError, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../../libs/threadmill/src/worker/task-executor.js';
import { FailService, MathService } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const LEASE_MS = 200;
const BROKER_SETTINGS = { queues: ['default'], intervalMs: 1_000, claimTtlMs: 5_000, maxRecoveries: 3 };
const HEARTBEAT = { id: 'host:1:0', queues: ['default'], concurrency: 1, startedAt: 0, done: 0, held: 1 };
const SUCCESS = { kind: 'successful', returnValue: '2' } as const;

// What a worker and a broker do with a backend, driven by hand: claims, leases, fencing and the reaper.
describe.each(BACKENDS)('lease conformance: the $name backend', (backend) => {
  const apps: Subject[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function producer(): Promise<{ app: Subject; broker: Broker }> {
    const app = await backend.producer({ leaseTtlMs: LEASE_MS });
    apps.push(app);
    return { app, broker: new Broker(app.backend, new TaskExecutor(app.registry), BROKER_SETTINGS) };
  }

  it('leases ready runs (of one partition key) in order under one token, and the runs read RUNNING', async () => {
    const { app } = await producer();
    const low = await app.queue.enqueue(MathService, 'add', [1, 1], { partitionKey: 'lease' });
    const high = await app.queue.enqueue(MathService, 'add', [2, 2], { priority: 3, partitionKey: 'lease' });
    const claimed = await app.backend.claim(['default'], 5, 'host:1:0', 0);
    expect(claimed.map((run) => run.id)).toEqual([high.id, low.id]);
    expect(claimed[0]).toMatchObject({ queue: 'default', attempts: 1, workerIds: ['host:1:0'], errors: [] });
    expect(claimed[0]!.token).toBe(claimed[1]!.token);
    expect(claimed[0]!.deadline - claimed[0]!.claimedAt).toBe(LEASE_MS);
    expect(await app.queue.getResult(low.id)).toMatchObject({ status: TaskStatus.RUNNING, attempts: 1 });
    expect(await app.backend.claim(['default'], 5, 'host:2:0', 0)).toEqual([]);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0, running: 2 });
  });

  it('applies an acknowledgement only under its lease token, and only once', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const ack = (token: string) => [{ id, queue: 'default', token, outcome: SUCCESS }];
    expect(await app.backend.acknowledge(ack('not-the-token'))).toEqual([false]);
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.RUNNING);
    expect(await app.backend.acknowledge(ack(leased!.token))).toEqual([true]);
    expect(await app.backend.acknowledge(ack(leased!.token))).toEqual([false]);
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 2, attempts: 1 });
    expect((await app.backend.stats('default'))['staleAcks']).toBe(2);
  });

  it('hands a released, never-started lease back to READY uncharged', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(await app.backend.release([leased!])).toEqual([true]);
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again).toMatchObject({ id, attempts: 1, workerIds: ['host:2:0'] });
    expect(await app.backend.release([leased!])).toEqual([false]);
  });

  it('refuses to hand back a lease whose start was recorded, and hands back an announced one uncharged', async () => {
    const { app } = await producer();
    const { id: started } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const { id: announced } = await app.queue.enqueue(MathService, 'add', [2, 2]);
    const leases = await app.backend.claim(['default'], 2, 'host:1:0', 0);
    // A partitioned backend promises no order between partitions: pick each lease by its run.
    expect(leases.map((lease) => lease.id).sort()).toEqual([started, announced].sort());
    const first = leases.find((lease) => lease.id === started);
    const second = leases.find((lease) => lease.id === announced);
    await app.backend.acknowledge([], [first!]);
    expect(await app.backend.announceStart(second!)).toBe(true);
    expect(await app.backend.release([first!, second!])).toEqual([false, true]);
    expect(await app.queue.getResult(started)).toMatchObject({ status: TaskStatus.RUNNING });
    expect(await app.queue.getResult(announced)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    // The started attempt is still its holder's to settle, and counts.
    expect(
      await app.backend.acknowledge([{ id: started, queue: 'default', token: first!.token, outcome: SUCCESS }]),
    ).toEqual([true]);
    expect(await app.queue.getResult(started)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1 });
  });

  it('keeps a renewed lease past its first deadline, and refuses to renew another token', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const renewal = { id, queue: 'default', token: leased!.token, leaseTtlMs: 5_000 };
    expect(await app.backend.renew(HEARTBEAT, 10_000, [renewal, { ...renewal, token: 'other' }])).toEqual([
      'held',
      'lost',
    ]);
    // A lease of a paused queue is extended all the same, and says its queue is paused.
    await app.backend.pause('default');
    expect(await app.backend.renew(HEARTBEAT, 10_000, [renewal])).toEqual(['paused']);
    await app.backend.resume('default');
    expect(await app.backend.renew(HEARTBEAT, 10_000, [renewal])).toEqual(['held']);
    expect((await app.backend.workers()).map((worker) => worker.id)).toEqual(['host:1:0']);
    await delay(LEASE_MS + 50);
    await broker.pass();
    expect(await app.backend.acknowledge([{ id, queue: 'default', token: leased!.token, outcome: SUCCESS }])).toEqual([
      true,
    ]);
  });

  it('hands a lease that expired before its attempt started back to READY, uncharged but suspect', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await delay(LEASE_MS + 50);
    await broker.pass();
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.READY, attempts: 0, errors: [] });
    expect(broker.reaped).toBe(0);
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again).toMatchObject({ id, attempts: 1, workerIds: ['host:2:0'], recoveries: 1 });
    expect(again!.token).not.toBe(leased!.token);
  });

  it("counts a suspect's announced start that expires as a recovery, charging nothing, and quarantines the run at maxRecoveries", async () => {
    const { app, broker } = await producer();
    // No retry policy: an expiry that charged its attempt would end the run FAILED.
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    /** A worker claims the run, announces its start and dies: its lease expires, and a broker pass follows. */
    const dieAnnounced = async (expiry: number) => {
      const [leased] = await app.backend.claim(['default'], 1, `host:${expiry}:0`, 0);
      expect(leased).toMatchObject({ id, attempts: 1, recoveries: expiry - 1 });
      expect(await app.backend.announceStart({ ...leased!, token: 'not-the-token' })).toBe(false);
      expect(await app.backend.announceStart(leased!)).toBe(true);
      await delay(LEASE_MS + 50);
      await broker.pass();
    };
    for (let expiry = 1; expiry < BROKER_SETTINGS.maxRecoveries; expiry++) {
      await dieAnnounced(expiry);
      expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.READY, attempts: 0, errors: [] });
      expect(broker.reaped).toBe(0);
    }
    await dieAnnounced(BROKER_SETTINGS.maxRecoveries);
    // The third death in a row as it started: the broker quarantines it.
    expect(broker.reaped).toBe(1);
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.QUARANTINED, attempts: 1 });
  });

  it('charges the expiry of an announced start once a start mark recorded it', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(await app.backend.announceStart(leased!)).toBe(true);
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
    await delay(LEASE_MS + 50);
    await broker.pass();
    expect(broker.reaped).toBe(1);
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
  });

  it('hands an expired started lease to the retry policy as AcknowledgementTimeoutError, and fences the old holder', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(FailService, 'flaky', [0]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
    await delay(LEASE_MS + 50);
    await broker.pass();
    expect(broker.reaped).toBe(1);
    const retried = await app.queue.getResult(id);
    expect(retried).toMatchObject({ status: TaskStatus.READY, attempts: 1 });
    expect(retried.runAfter).not.toBeNull();
    expect(retried.errors).toEqual([
      expect.objectContaining({ errorClass: AcknowledgementTimeoutError.name, attempt: 1 }),
    ]);
    expect(await app.backend.acknowledge([{ id, queue: 'default', token: leased!.token, outcome: SUCCESS }])).toEqual([
      false,
    ]);
    await delay(80); // the backoff (50 ms) runs out
    await broker.pass();
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again).toMatchObject({ id, attempts: 2, workerIds: ['host:1:0', 'host:2:0'], recoveries: 1 });
  });

  it('finishes an expired started lease FAILED when the task has no retry policy', async () => {
    const { app, broker } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await app.backend.acknowledge([], [leased!]);
    await delay(LEASE_MS + 50);
    await broker.pass();
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ running: 0, failed: 1 });
  });

  it('requeues a FAILED run at its place, and purges a queue whole', async () => {
    const { app } = await producer();
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const error = { errorClass: 'Error', message: 'boom', stack: 'Error: boom', attempt: 1 };
    await app.backend.acknowledge([{ id, queue: 'default', token: leased!.token, outcome: { kind: 'failed', error } }]);
    expect(await app.backend.requeue(id, 'default')).toEqual({ requeued: true, status: 'FAILED' });
    expect(await app.backend.requeue(id, 'default')).toEqual({ requeued: false, status: 'READY' });
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.READY, attempts: 1, finishedAt: null });
    await app.queue.enqueue(MathService, 'add', [2, 2], { delayMs: 60_000 });
    expect(await app.backend.purge('default')).toBe(2);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 0, deferred: 0, failed: 0 });
  });
});
