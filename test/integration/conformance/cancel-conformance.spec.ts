import { InvalidRunStateError, TaskResultNotFoundError, TaskStatus } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const WORKER = 'host:1:0';
const HEARTBEAT = { id: WORKER, queues: ['work'], concurrency: 1, startedAt: 0, done: 0, held: 1 };

describe.each(BACKENDS)('conformance: cancelling runs on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work'] });
  });
  afterEach(() => app.close());

  // One partition key: one order, on a partitioned backend too.
  const enqueue = (options: { delayMs?: number } = {}) =>
    app.queue.enqueue('MathService.add', [1, 2], { queue: 'work', partitionKey: 'work', ...options });
  const counts = async () => (await app.inspector.counts(['work']))[0]!;

  it('withdraws a READY run at once: CANCELLED, counted, listed, never claimed; a second cancel changes nothing', async () => {
    const run = await enqueue();
    const other = await enqueue();
    expect(await app.queue.cancel(run.id)).toEqual({ id: run.id, cancelled: true, previousStatus: TaskStatus.READY });
    const result = await app.queue.getResult(run.id);
    expect(result.status).toBe(TaskStatus.CANCELLED);
    expect(result.finishedAt).toBeInstanceOf(Date);
    expect(result.attempts).toBe(0);
    expect(await counts()).toMatchObject({ ready: 1, cancelled: 1 });
    expect((await app.inspector.list('work', 'cancelled')).map((r) => r.id)).toEqual([run.id]);
    expect((await app.backend.claim(['work'], 10, WORKER, 0)).map((r) => r.id)).toEqual([other.id]);
    expect(await app.queue.cancel(run.id)).toEqual({ id: run.id, cancelled: false, previousStatus: 'CANCELLED' });
    expect((await app.backend.stats('work'))['cancelled']).toBe(1);
  });

  it('withdraws a deferred run', async () => {
    const run = await enqueue({ delayMs: 60_000 });
    expect(await app.inspector.cancel(run.id)).toMatchObject({ cancelled: true, previousStatus: TaskStatus.READY });
    expect(await counts()).toMatchObject({ deferred: 0, cancelled: 1 });
    expect((await app.backend.promote(['work'])).promoted).toBe(0);
  });

  it("revokes a running run's lease: its renewal answers cancelled, its late acknowledgement is discarded", async () => {
    const run = await enqueue();
    const [leased] = await app.backend.claim(['work'], 1, WORKER, 0);
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
    expect(await app.queue.cancel(run.id)).toMatchObject({ cancelled: true, previousStatus: TaskStatus.RUNNING });
    expect(await counts()).toMatchObject({ running: 0, cancelled: 1 });
    const renewal = { id: run.id, queue: 'work', token: leased!.token, leaseTtlMs: 30_000 };
    expect(await app.backend.renew(HEARTBEAT, 30_000, [renewal])).toEqual(['cancelled']);
    const late = { id: run.id, queue: 'work', token: leased!.token };
    const applied = await app.backend.acknowledge([{ ...late, outcome: { kind: 'successful', returnValue: '3' } }]);
    expect(applied).toEqual([false]);
    const result = await app.queue.getResult(run.id);
    // Its start was recorded: the attempt counts, and its outcome is not the late one.
    expect(result).toMatchObject({ status: TaskStatus.CANCELLED, attempts: 1, returnValue: undefined });
    expect((await app.backend.stats('work'))['staleAcks']).toBe(1);
  });

  it('does not charge a held run whose attempt never started', async () => {
    const run = await enqueue();
    await app.backend.claim(['work'], 1, WORKER, 0);
    await app.queue.cancel(run.id);
    expect((await app.queue.getResult(run.id)).attempts).toBe(0);
  });

  it('refuses a finished run and an unknown id with typed errors', async () => {
    const run = await enqueue();
    const [leased] = await app.backend.claim(['work'], 1, WORKER, 0);
    await app.backend.acknowledge([{ ...leased!, outcome: { kind: 'successful', returnValue: '3' } }]);
    await expect(app.queue.cancel(run.id)).rejects.toThrow(InvalidRunStateError);
    await expect(app.queue.cancel(run.id)).rejects.toThrow(
      /it is SUCCESSFUL; only READY \(or deferred\), WAITING \(a flow node\) or RUNNING/,
    );
    await expect(app.queue.cancel('no-such-run')).rejects.toThrow(TaskResultNotFoundError);
    expect((await app.queue.getResult(run.id)).status).toBe(TaskStatus.SUCCESSFUL);
  });

  it('requeues a CANCELLED run to its place, and purges cancelled runs', async () => {
    const first = await enqueue();
    const second = await enqueue();
    await app.queue.cancel(first.id);
    expect((await app.inspector.requeue(first.id)).status).toBe(TaskStatus.READY);
    expect(await counts()).toMatchObject({ ready: 2, cancelled: 0 });
    expect((await app.backend.claim(['work'], 10, WORKER, 0)).map((r) => r.id)).toEqual([first.id, second.id]);
    const third = await enqueue();
    await app.queue.cancel(third.id);
    expect(await app.inspector.purge('work')).toBe(3);
    expect(await counts()).toMatchObject({ running: 0, cancelled: 0 });
  });

  it('wakes a waiter with the CANCELLED run', async () => {
    const run = await enqueue();
    const waiting = app.queue.waitFor(run.id, { timeoutMs: 10_000 });
    // Registered before the cancel: waitFor registers at once, the cancel comes after a round trip.
    await app.backend.watch([run.id], 60_000);
    await app.queue.cancel(run.id);
    expect((await waiting).status).toBe(TaskStatus.CANCELLED);
    expect((await app.queue.waitFor(run.id, { timeoutMs: 1_000 })).status).toBe(TaskStatus.CANCELLED);
  });

  it('keeps nothing of a cancelled run with a failed resultTtlMs of 0, once its waiter is told', async () => {
    await app.close();
    app = await backend.producer({
      queues: [...FIXTURE_QUEUES, 'work'],
      resultTtlMs: { successful: 60_000, failed: 0 },
    });
    // With nothing kept, a run can be waited for only when enqueued waitable (docs/tasks.md).
    const run = await app.queue.enqueue('MathService.add', [1, 2], { queue: 'work', waitable: true });
    expect(await app.queue.cancel(run.id)).toMatchObject({ cancelled: true });
    expect((await app.queue.waitFor(run.id, { timeoutMs: 10_000 })).status).toBe(TaskStatus.CANCELLED);
    await expect(app.queue.getResult(run.id)).rejects.toThrow(TaskResultNotFoundError);
    expect(await counts()).toMatchObject({ ready: 0, cancelled: 0 });
    expect((await app.backend.stats('work'))['cancelled']).toBe(1);
  });
});
