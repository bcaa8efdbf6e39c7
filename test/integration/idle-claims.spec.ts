import { TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { Harness, type HarnessOptions } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/**
 * How an idle consumer gets work: it blocks on its queues' wake markers with
 * its claim written behind the wait, and Redis runs that claim the moment the
 * wait ends. These are the paths that once handed runs to consumers that
 * were busy, dead, or could not read them (direct delivery), and must now
 * lease a run only to a consumer that takes it.
 */
describe('claims of an idle consumer', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(config: HarnessOptions): Promise<Harness> {
    const app = await Harness.start(config);
    apps.push(app);
    return app;
  }

  it('runs a run enqueued while nearly every slot is busy and the wait was woken for another queue', async () => {
    // 18 of 20 slots busy in `emails`; a deferred run of `reports` comes due
    // and wakes the consumer's wait; then one run is enqueued into `emails`
    // while the 18 still run. (A consumer once stayed registered for direct
    // delivery here, took the run into an inbox it did not read, and the run
    // failed when its lease expired, without having run.)
    const app = await start({
      options: { leaseTtlMs: 1_000, brokerIntervalMs: 100 },
      worker: { queues: ['emails', 'reports'], concurrency: 20, prefetch: 0, shutdownTimeoutMs: 10_000 },
    });
    const slow = await app.queue.enqueueMany(
      Array.from({ length: 18 }, () => ({
        task: SlowService,
        method: 'sleep' as const,
        args: [4_000],
        queue: 'emails',
      })),
    );
    await waitUntil('18 runs hold their slots', () => app.worker.held === 18);
    await app.queue.enqueue(MathService, 'add', [1, 1], { queue: 'reports', delayMs: 300 });
    await delay(700);
    const last = await app.queue.enqueue(MathService, 'add', [2, 2], { queue: 'emails' });
    const result = await app.waitFor(last.id, undefined, 2_500);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1, errors: [], returnValue: 4 });
    // It ran beside the 18, not after them.
    expect((await app.queue.getResult(slow[0]!.id)).status).toBe(TaskStatus.RUNNING);
    await Promise.all(slow.map((run) => app.waitFor(run.id)));
  });

  it('runs a run enqueued while every slot has been busy longer than an idle wait', async () => {
    // The default concurrency and prefetch; ten long runs hold every slot
    // past the longest idle wait (10 s) before one more run is enqueued.
    const app = await start({
      options: { leaseTtlMs: 1_000, brokerIntervalMs: 100 },
      worker: { queues: ['default'], concurrency: 10, prefetch: 2, shutdownTimeoutMs: 20_000 },
    });
    const slow = await app.queue.enqueueMany(
      Array.from({ length: 10 }, () => ({ task: SlowService, method: 'sleep' as const, args: [12_000] })),
    );
    await waitUntil('every slot is busy', () => app.worker.held === 10);
    await delay(10_500);
    const late = await app.queue.enqueue(MathService, 'add', [3, 4]);
    const result = await app.waitFor(late.id, undefined, 5_000);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1, errors: [], returnValue: 7 });
    for (const run of slow) expect((await app.waitFor(run.id)).attempts).toBe(1);
  }, 40_000);

  it('runs every run of odd ids once, each enqueued into an idle worker', async () => {
    const app = await start({ options: { leaseTtlMs: 2_000 }, worker: { queues: ['default'] } });
    const ids = [
      'order|1',
      'a|b|c|',
      '|',
      'line\nbreak',
      'tab\there',
      'spaced id',
      'ünïcødé ✓',
      'a:b:c',
      '{tag}',
      '"q"',
    ];
    for (const id of ids) {
      await waitUntil('the worker is idle', () => app.worker.held === 0);
      const run = await app.queue.enqueue(MathService, 'add', [1, 2], { id });
      expect(run.id).toBe(id);
      expect(await app.waitFor(id, undefined, 3_000)).toMatchObject({
        id,
        status: TaskStatus.SUCCESSFUL,
        attempts: 1,
        returnValue: 3,
      });
    }
  });

  it('stops at once while blocked, leaving nothing leased', async () => {
    const app = await start({ options: { leaseTtlMs: 30_000 }, worker: { queues: ['default'] } });
    const first = await app.queue.enqueue(MathService, 'add', [1, 1]);
    await app.waitFor(first.id);
    // Blocked for up to 10 s (a third of the lease): the stop must not wait for it.
    await delay(200);
    const stoppedAt = Date.now();
    expect(await app.worker.close()).toBe(true);
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    const late = await app.queue.enqueue(MathService, 'add', [2, 2]);
    expect(await app.queue.getResult(late.id)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ running: 0, ready: 1 });
  });

  it('ends a blocked claim when interrupted, and the claim still takes what is ready', async () => {
    const app = await start({});
    const { backend } = app;
    const run = await app.queue.enqueue(MathService, 'add', [1, 1]);
    // A ready run whose wake marker is gone (its popper died): the wait blocks.
    await backend.connections.client.del(backend.keys.wake('default'));
    const waiter = backend.claimWaiter(['default'], 'idle:1:0');
    try {
      const startedAt = Date.now();
      const claim = waiter.claim(4, 0, 30_000);
      await delay(100);
      await waiter.interrupt();
      const claimed = await claim;
      // Well before the wait's 30 s: the interrupt ended it.
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      expect(claimed.map((leased) => leased.id)).toEqual([run.id]);
      // Its consumer is stopping: it hands the run back, uncharged.
      expect(await backend.release(claimed)).toEqual([true]);
      expect(await app.queue.getResult(run.id)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    } finally {
      await waiter.close();
    }
  });

  it('sets the wake marker of exactly the queues with runs to claim, however many it is given', async () => {
    const app = await start({});
    const { backend } = app;
    const redis = backend.connections.client;
    const queues = ['default', 'emails', 'reports'];
    await app.queue.enqueue(MathService, 'add', [1, 1], { queue: 'emails' });
    await app.queue.enqueue(MathService, 'add', [2, 2], { queue: 'reports', priority: 1 });
    // The claim of a consumer that was busy when woken popped the markers (the partitioned backend's path).
    await redis.del(...queues.map((queue) => backend.keys.wake(queue)));
    expect(await backend.wakeQueues(['emails'])).toBe(1);
    expect(await backend.wakeQueues(queues)).toBe(2);
    expect(await Promise.all(queues.map((queue) => redis.zrange(backend.keys.wake(queue), 0, -1)))).toEqual([
      [],
      ['w'],
      ['w'],
    ]);
    // Nothing written where it does not belong: the ready sets hold the runs alone.
    expect(await Promise.all(queues.map((queue) => redis.zcard(backend.keys.ready(queue))))).toEqual([0, 0, 1]);
  });

  it('claims behind a wait that times out, and runs its claim at once when woken', async () => {
    const app = await start({});
    const { backend } = app;
    const waiter = backend.claimWaiter(['default', 'emails'], 'idle:2:0');
    try {
      expect(await waiter.claim(4, 0, 50)).toEqual([]);
      const claim = waiter.claim(4, 0, 30_000);
      await delay(50);
      const enqueuedAt = Date.now();
      const run = await app.queue.enqueue(MathService, 'add', [1, 1], { queue: 'emails' });
      const claimed = await claim;
      // Well before the wait's 30 s: the enqueue woke it.
      expect(Date.now() - enqueuedAt).toBeLessThan(10_000);
      expect(claimed).toMatchObject([{ id: run.id, queue: 'emails', attempts: 1 }]);
      expect((await backend.leases('emails')).map((lease) => lease.id)).toEqual([run.id]);
    } finally {
      await waiter.close();
    }
  });
});
