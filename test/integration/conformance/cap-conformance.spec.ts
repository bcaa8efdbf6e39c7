import { InvalidInspectionError, TaskStatus } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { UNPARTITIONED_BACKENDS, type Subject } from './backends.js';

describe.each(UNPARTITIONED_BACKENDS)('conformance: concurrency caps on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work', 'other'] });
  });
  afterEach(() => app.close());

  const enqueue = (queue: string, options: { priority?: number } = {}) =>
    app.queue.enqueue('MathService.add', [1, 2], { queue, ...options });
  const succeed = (run: { id: string; queue: string; token: string }) =>
    app.backend.acknowledge([{ ...run, outcome: { kind: 'successful', returnValue: '3' } }]);

  it('sets, shows and removes a cap, registering a queue no application registered', async () => {
    const queue = 'not-deployed-yet';
    expect(await app.inspector.concurrencyCap(queue)).toBeNull();
    expect(await app.inspector.setConcurrencyCap(queue, 3)).toEqual({ queue, cap: 3, previous: null });
    expect(await app.inspector.setConcurrencyCap(queue, 3)).toEqual({ queue, cap: 3, previous: 3 });
    expect(await app.inspector.queues()).toContain(queue);
    expect((await app.inspector.overview(1)).find((q) => q.queue === queue)).toMatchObject({ concurrencyCap: 3 });
    expect((await app.inspector.overview(1)).find((q) => q.queue === 'default')).toMatchObject({
      concurrencyCap: null,
    });
    expect(await app.inspector.setConcurrencyCap(queue, null)).toEqual({ queue, cap: null, previous: 3 });
    expect(await app.inspector.concurrencyCap(queue)).toBeNull();
  });

  it('writes the caps of the concurrencyCaps option at boot, leaving queues it omits as Redis holds them', async () => {
    await app.inspector.setConcurrencyCap('other', 7);
    await app.inspector.setConcurrencyCap('work', 9);
    // A second application on the same keys (Redis; in memory, a keyspace of its own).
    const booted = await backend.producer({
      queues: [...FIXTURE_QUEUES, 'work', 'other'],
      concurrencyCaps: { work: 1 },
      ...(app.alias === undefined ? {} : { alias: app.alias }),
    });
    try {
      expect(await booted.inspector.concurrencyCap('work')).toBe(1);
      // On shared keys the cap the option leaves out is kept; a keyspace of its own has none.
      expect(await booted.inspector.concurrencyCap('other')).toBe(app.alias === undefined ? null : 7);
      await booted.queue.enqueue('MathService.add', [1, 2], { queue: 'work' });
      await booted.queue.enqueue('MathService.add', [1, 2], { queue: 'work' });
      expect(await booted.backend.claim(['work'], 10, 'host:1:0', 0)).toHaveLength(1);
      expect((await booted.inspector.counts(['work']))[0]).toMatchObject({ ready: 1, running: 1 });
    } finally {
      await booted.close();
    }
  });

  it('refuses a cap that is not a positive integer, and a malformed queue name, with a typed error', async () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '2' as unknown as number]) {
      await expect(app.inspector.setConcurrencyCap('work', bad)).rejects.toThrow(InvalidInspectionError);
    }
    await expect(app.inspector.setConcurrencyCap('no spaces', 1)).rejects.toThrow(InvalidInspectionError);
    expect(await app.inspector.concurrencyCap('work')).toBeNull();
  });

  it('leases no more runs of a capped queue than the cap leaves room for, in order, beside other queues', async () => {
    const [queue, other] = ['work', 'other'];
    await app.inspector.setConcurrencyCap(queue, 2);
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await enqueue(queue, { priority: i === 4 ? 9 : 0 }));
    const elsewhere = [await enqueue(other), await enqueue(other)];
    // The highest priority first, then FIFO: the cap takes the queue's head, not any two runs.
    const first = await app.backend.claim([queue, other], 10, 'host:1:0', 0);
    expect(first.filter((run) => run.queue === queue).map((run) => run.id)).toEqual([runs[4]!.id, runs[0]!.id]);
    expect(first.filter((run) => run.queue === other).map((run) => run.id)).toEqual(elsewhere.map((run) => run.id));
    // At the cap: nothing more, and the held-back runs stay READY, uncharged.
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    expect((await app.inspector.counts([queue]))[0]).toMatchObject({ ready: 3, running: 2 });
    const waiting = await app.queue.getResult(runs[1]!.id);
    expect(waiting.status).toBe(TaskStatus.READY);
    expect(waiting.attempts).toBe(0);
    // One lease ends: one more run may be leased, the next in order.
    await succeed(first[0]!);
    const next = await app.backend.claim([queue], 10, 'host:1:0', 0);
    expect(next.map((run) => run.id)).toEqual([runs[1]!.id]);
    expect(next[0]!.attempts).toBe(1);
    // Raising the cap lets more in; removing it lets in the rest.
    await app.inspector.setConcurrencyCap(queue, 3);
    expect((await app.backend.claim([queue], 10, 'host:1:0', 0)).map((run) => run.id)).toEqual([runs[2]!.id]);
    await app.inspector.setConcurrencyCap(queue, null);
    expect((await app.backend.claim([queue], 10, 'host:1:0', 0)).map((run) => run.id)).toEqual([runs[3]!.id]);
  });

  it('takes no lease away when the cap is lowered below the runs leased, and leases none until below it', async () => {
    const queue = 'work';
    for (let i = 0; i < 4; i++) await enqueue(queue);
    const leased = await app.backend.claim([queue], 3, 'host:1:0', 0);
    await app.inspector.setConcurrencyCap(queue, 1);
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    expect(await succeed(leased[0]!)).toEqual([true]);
    expect(await succeed(leased[1]!)).toEqual([true]);
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    expect(await succeed(leased[2]!)).toEqual([true]);
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toHaveLength(1);
  });

  it('wakes an idle consumer kept blocked at the cap when a lease of the queue ends', async () => {
    const queue = 'work';
    await app.inspector.setConcurrencyCap(queue, 1);
    await enqueue(queue);
    const held = await enqueue(queue);
    const [leased] = await app.backend.claim([queue], 1, 'host:1:0', 0);
    const waiter = app.backend.claimWaiter([queue], 'host:2:0');
    try {
      // The queue is at its cap: the marker the enqueues left ends one wait
      // at most, whose claim takes nothing and clears it.
      expect(await waiter.claim(1, 0, 1_000)).toEqual([]);
      const waiting = waiter.claim(1, 0, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const endedAt = Date.now();
      await succeed(leased!);
      expect((await waiting).map((run) => run.id)).toEqual([held.id]);
      // Woken by the acknowledgement, not by the wait's minute-long timeout.
      expect(Date.now() - endedAt).toBeLessThan(30_000);
    } finally {
      await waiter.close();
    }
  });
});
