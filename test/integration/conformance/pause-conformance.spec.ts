import { InvalidInspectionError, TaskStatus } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

/** Polls `condition` every 10 ms until it holds, failing after 10 s. */
async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(BACKENDS)('conformance: pausing a queue on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work', 'other'] });
  });
  afterEach(() => app.close());

  // One partition key: one order, on a partitioned backend too.
  const enqueue = (queue: string, options: { delayMs?: number; priority?: number } = {}) =>
    app.queue.enqueue('MathService.add', [1, 2], { queue, partitionKey: 'pause', ...options });

  it('pauses a queue no application registered, registers it, and shows it paused in the overview', async () => {
    const queue = 'not-deployed-yet';
    const first = await app.inspector.pause(queue);
    expect(first).toMatchObject({ queue, paused: true, changed: true });
    expect(first.pausedAt).toBeGreaterThan(Date.now() - 60_000);
    const again = await app.inspector.pause(queue);
    expect(again).toEqual({ ...first, changed: false });
    expect(await app.inspector.queues()).toContain(queue);
    const overview = (await app.inspector.overview(1)).find((q) => q.queue === queue)!;
    expect(overview).toMatchObject({ paused: true, pausedAt: first.pausedAt, ready: 0 });
    expect((await app.inspector.overview(1)).find((q) => q.queue === 'default')).toMatchObject({
      paused: false,
      pausedAt: null,
    });
    expect(await app.inspector.resume(queue)).toEqual({ queue, paused: false, pausedAt: null, changed: true });
    expect(await app.inspector.resume(queue)).toMatchObject({ changed: false });
    expect(await app.inspector.pauseState(queue)).toEqual({ queue, paused: false, pausedAt: null });
  });

  it('refuses a malformed queue name with a typed error', async () => {
    await expect(app.inspector.pause('no spaces')).rejects.toThrow(InvalidInspectionError);
    await expect(app.inspector.resume('')).rejects.toThrow(InvalidInspectionError);
  });

  it('accepts enqueues while paused, claims nothing of the queue, and claims them in order after resume', async () => {
    const [queue, other] = ['work', 'other'];
    await app.inspector.pause(queue);
    const low = await enqueue(queue);
    const high = await enqueue(queue, { priority: 5 });
    const elsewhere = await enqueue(other);
    expect((await app.queue.getResult(low.id)).status).toBe(TaskStatus.READY);
    // A claim of both queues takes only the other queue's run.
    const claimed = await app.backend.claim([queue, other], 10, 'host:1:0', 0);
    expect(claimed.map((run) => run.id)).toEqual([elsewhere.id]);
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    expect((await app.inspector.counts([queue]))[0]).toMatchObject({ ready: 2, running: 0 });
    await app.inspector.resume(queue);
    const resumed = await app.backend.claim([queue], 10, 'host:1:0', 0);
    expect(resumed.map((run) => run.id)).toEqual([high.id, low.id]);
  });

  it('lets deferred runs come due while paused (promoted, READY) without claiming them', async () => {
    const queue = 'work';
    await app.inspector.pause(queue);
    const deferred = await enqueue(queue, { delayMs: 50 });
    await until('the deferred run is promoted', async () => (await app.backend.promote([queue])).promoted === 1);
    expect((await app.inspector.counts([queue]))[0]).toMatchObject({ ready: 1, deferred: 0 });
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    await app.inspector.resume(queue);
    expect((await app.backend.claim([queue], 10, 'host:1:0', 0)).map((run) => run.id)).toEqual([deferred.id]);
  });

  it('acknowledges a run leased before the pause as usual', async () => {
    const queue = 'work';
    const run = await enqueue(queue);
    const [leased] = await app.backend.claim([queue], 1, 'host:1:0', 0);
    await app.inspector.pause(queue);
    const applied = await app.backend.acknowledge([
      { id: leased!.id, queue, token: leased!.token, outcome: { kind: 'successful', returnValue: '3' } },
    ]);
    expect(applied).toEqual([true]);
    expect((await app.queue.getResult(run.id)).status).toBe(TaskStatus.SUCCESSFUL);
    await app.inspector.resume(queue);
  });

  it('keeps an idle consumer of a paused queue blocked for its whole wait, and wakes it at resume', async () => {
    const queue = 'work';
    await app.inspector.pause(queue);
    const run = await enqueue(queue);
    const waiter = app.backend.claimWaiter([queue], 'host:2:0');
    try {
      // The enqueue's wake marker may end one wait (the Redis backend's
      // enqueue does not read the flag): its claim takes nothing and clears
      // the marker.
      expect(await waiter.claim(1, 0, 1_000)).toEqual([]);
      // Then blocked, not woken over and over: the wait lasts its whole
      // timeout (a loaded machine only makes it longer), and takes nothing.
      const sentAt = Date.now();
      expect(await waiter.claim(1, 0, 1_000)).toEqual([]);
      expect(Date.now() - sentAt).toBeGreaterThanOrEqual(900);
      // Resume ends the next wait at once: it would otherwise last a minute.
      const waiting = waiter.claim(1, 0, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const resumedAt = Date.now();
      await app.inspector.resume(queue);
      expect((await waiting).map((leased) => leased.id)).toEqual([run.id]);
      expect(Date.now() - resumedAt).toBeLessThan(30_000);
    } finally {
      await waiter.close();
    }
  });
});

describe.each(BACKENDS)('conformance: a paused queue with workers on the $name backend', (backend) => {
  let app: Subject;
  beforeEach(async () => {
    app = await backend.executing();
  });
  afterEach(() => app.close());

  it('runs the other queues while one is paused, and the paused one once resumed', async () => {
    await app.inspector.pause('emails');
    const held = await app.queue.enqueue('MathService.add', [1, 2], { queue: 'emails' });
    const free = await app.queue.enqueue('MathService.add', [3, 4]);
    expect((await app.queue.waitFor(free.id, { timeoutMs: 10_000 })).status).toBe(TaskStatus.SUCCESSFUL);
    expect((await app.queue.getResult(held.id)).status).toBe(TaskStatus.READY);
    await app.inspector.resume('emails');
    const resumed = await app.queue.waitFor(held.id, { timeoutMs: 10_000 });
    expect(resumed).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1, returnValue: 3 });
  });
});
