import { InvalidEnqueueError, TaskStatus, type DedupeOptions } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { MathService } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const SUCCESS = { kind: 'successful', returnValue: '2' } as const;
const FAILURE = {
  kind: 'failed',
  error: { errorClass: 'Error', message: 'no', stack: '', attempt: 1 },
} as const;

let keys = 0;
/** A key no other test uses (the Redis backend's keyspace is shared by the file). */
const freshKey = () => `key-${++keys}`;

const add = (app: Subject, a: number, dedupe: DedupeOptions, queue?: string) =>
  app.queue.enqueue(MathService, 'add', [a, 1], queue ? { dedupe, queue } : { dedupe });

/** Claims the one ready run of 'default' (it must be `id`) and returns its lease. */
async function claim(app: Subject, id: string) {
  const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
  expect(leased?.id).toBe(id);
  return leased!;
}

// Deduplication keys (docs/deduplication.md), driven by hand through the backend: claims, acknowledgements, removals.
describe.each(BACKENDS)('dedupe conformance: the $name backend', (backend) => {
  const apps: Subject[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function producer(): Promise<Subject> {
    const app = await backend.producer();
    apps.push(app);
    return app;
  }

  it('drop: a key held by a waiting run answers with that run, marked deduplicated, and stores nothing', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key });
    expect(first.deduplicated).toBeUndefined();
    const second = await add(app, 2, { key });
    expect(second).toMatchObject({ id: first.id, deduplicated: true, args: [1, 1], status: TaskStatus.READY });
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 1 });
  });

  it("drop with releaseOn 'start': the claim releases the key, and the next enqueue stores a new run", async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key });
    await claim(app, first.id);
    const second = await add(app, 2, { key });
    expect(second.id).not.toBe(first.id);
    expect(second.deduplicated).toBeUndefined();
    expect(await add(app, 3, { key })).toMatchObject({ id: second.id, deduplicated: true });
  });

  it("drop with releaseOn 'finish': the key holds while its run runs, and is released by its outcome", async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, releaseOn: 'finish' });
    const leased = await claim(app, first.id);
    expect(await add(app, 2, { key, releaseOn: 'finish' })).toMatchObject({ id: first.id, deduplicated: true });
    await app.backend.acknowledge([{ id: first.id, queue: 'default', token: leased.token, outcome: FAILURE }]);
    const after = await add(app, 3, { key, releaseOn: 'finish' });
    expect(after.id).not.toBe(first.id);
    expect(after.deduplicated).toBeUndefined();
  });

  it('drop with ttlMs: the key holds for ttlMs after the first enqueue, even once its run succeeded', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, ttlMs: 60_000 });
    const leased = await claim(app, first.id);
    await app.backend.acknowledge([{ id: first.id, queue: 'default', token: leased.token, outcome: SUCCESS }]);
    expect(await add(app, 2, { key, ttlMs: 60_000 })).toMatchObject({
      id: first.id,
      deduplicated: true,
      status: TaskStatus.SUCCESSFUL,
    });
  });

  it('drop with ttlMs: once ttlMs passed and the run started, the key is free', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, ttlMs: 50 });
    await claim(app, first.id);
    await delay(120);
    expect((await add(app, 2, { key, ttlMs: 50 })).id).not.toBe(first.id);
  });

  it('a run that is removed releases its key (dequeued, or purged with its queue)', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, ttlMs: 60_000, releaseOn: 'finish' });
    await app.inspector.dequeue(first.id);
    const second = await add(app, 2, { key, ttlMs: 60_000, releaseOn: 'finish' });
    expect(second.id).not.toBe(first.id);
    await app.inspector.purge('default');
    expect((await add(app, 3, { key, ttlMs: 60_000, releaseOn: 'finish' })).id).not.toBe(second.id);
  });

  it('a run handed back unstarted holds its key again (it never started)', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key });
    const leased = await claim(app, first.id);
    await app.backend.release([leased]);
    expect(await add(app, 2, { key })).toMatchObject({ id: first.id, deduplicated: true, status: TaskStatus.READY });
  });

  it('a key holds only a run of its own queue: a run of its id moved to another queue releases it', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key });
    await app.inspector.dequeue(first.id);
    await app.queue.enqueue(MathService, 'add', [1, 1], { id: first.id, queue: 'emails' });
    const second = await add(app, 2, { key });
    expect(second.id).not.toBe(first.id);
    expect(second.deduplicated).toBeUndefined();
  });

  it('a key is scoped to its queue: the same key in another queue holds another run', async () => {
    const app = await producer();
    const key = freshKey();
    const here = await add(app, 1, { key });
    const there = await add(app, 1, { key }, 'emails');
    expect(there.id).not.toBe(here.id);
    expect(there.deduplicated).toBeUndefined();
    expect(await add(app, 2, { key }, 'emails')).toMatchObject({ id: there.id, deduplicated: true });
  });

  it('debounce: a waiting run takes the latest arguments and is pushed back, never past maxWaitMs', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, mode: 'debounce', ttlMs: 30_000, maxWaitMs: 40_000 });
    const firstDue = first.runAfter!.getTime();
    expect(firstDue - first.enqueuedAt.getTime()).toBe(30_000);
    await delay(20);
    const second = await add(app, 2, { key, mode: 'debounce', ttlMs: 30_000, maxWaitMs: 40_000 });
    expect(second).toMatchObject({ id: first.id, deduplicated: true, args: [2, 1] });
    expect(second.runAfter!.getTime()).toBeGreaterThan(firstDue);
    expect(second.runAfter!.getTime()).toBeLessThan(first.enqueuedAt.getTime() + 40_000);
    // A quiet period that would end past the cap: due at the cap, first enqueue + maxWaitMs.
    const third = await add(app, 3, { key, mode: 'debounce', ttlMs: 30_000, maxWaitMs: 30_010 });
    expect(third).toMatchObject({ id: first.id, args: [3, 1] });
    expect(third.runAfter!.getTime()).toBe(first.enqueuedAt.getTime() + 30_010);
    expect(third.enqueuedAt).toEqual(first.enqueuedAt);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0, deferred: 1 });
  });

  it('debounce: once its run is due and started, the next enqueue stores a new run', async () => {
    const app = await producer();
    const key = freshKey();
    const first = await add(app, 1, { key, mode: 'debounce', ttlMs: 1 });
    await delay(20);
    expect((await app.backend.promote(['default'])).promoted).toBe(1);
    await claim(app, first.id);
    const second = await add(app, 2, { key, mode: 'debounce', ttlMs: 60_000 });
    expect(second.id).not.toBe(first.id);
    expect(second).toMatchObject({ args: [2, 1], status: TaskStatus.READY });
    expect(second.deduplicated).toBeUndefined();
  });

  it('enqueueMany: items with one key make one run (drop: the first arguments; debounce: the last)', async () => {
    const app = await producer();
    const dropKey = freshKey();
    const debounceKey = freshKey();
    const items = [1, 2, 3].flatMap((a) => [
      { task: MathService, method: 'add' as const, args: [a, 1], dedupe: { key: dropKey } },
      {
        task: MathService,
        method: 'add' as const,
        args: [a, 2],
        dedupe: { key: debounceKey, mode: 'debounce' as const, ttlMs: 60_000 },
      },
    ]);
    const results = await app.queue.enqueueMany(items);
    const dropped = results.filter((_, i) => i % 2 === 0);
    const debounced = results.filter((_, i) => i % 2 === 1);
    expect(new Set(dropped.map((r) => r.id)).size).toBe(1);
    expect(new Set(debounced.map((r) => r.id)).size).toBe(1);
    expect(dropped.map((r) => r.deduplicated)).toEqual([undefined, true, true]);
    expect(debounced.map((r) => r.deduplicated)).toEqual([undefined, true, true]);
    expect((await app.queue.getResult(dropped[0]!.id)).args).toEqual([1, 1]);
    expect((await app.queue.getResult(debounced[0]!.id)).args).toEqual([3, 2]);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 1, deferred: 1 });
  });

  it('concurrent single enqueues with one key, coalesced into one call, make one run', async () => {
    const app = await producer();
    const key = freshKey();
    const results = await Promise.all(Array.from({ length: 50 }, (_, a) => add(app, a, { key })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => r.deduplicated !== true)).toHaveLength(1);
  });

  it.each([
    [{ key: '' }, /key must be a string of 1-200 characters/],
    [{ key: 'k', mode: 'debounce' }, /with mode 'debounce' needs ttlMs/],
    [{ key: 'k', mode: 'debounce', ttlMs: 500, maxWaitMs: 100 }, /maxWaitMs \(100\) must be at least ttlMs \(500\)/],
    [{ key: 'k', ttlMs: -1 }, /ttlMs must be an integer from 0/],
    [{ key: 'k', maxWaitMs: 5 }, /maxWaitMs applies to mode 'debounce' only/],
    [{ key: 'k', mode: 'throttle' }, /mode must be 'drop' or 'debounce'/],
    [{ key: 'k', releaseOn: 'end' }, /releaseOn must be 'start' or 'finish'/],
    [{ key: 'k', mode: 'debounce', ttlMs: 5, releaseOn: 'finish' }, /releaseOn must be 'start'/],
    [{ key: 'k', extra: 1 }, /unknown field "extra"/],
  ])('refuses dedupe %j with a typed error, writing nothing', async (dedupe, message) => {
    const app = await producer();
    const attempt = app.queue.enqueue(MathService, 'add', [1, 1], { dedupe: dedupe as DedupeOptions });
    await expect(attempt).rejects.toThrow(InvalidEnqueueError);
    await expect(attempt).rejects.toThrow(message);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0, deferred: 0 });
  });

  it('refuses dedupe with id, with waitable, and debounce with a delay', async () => {
    const app = await producer();
    const dedupe = { key: 'k' };
    await expect(app.queue.enqueue(MathService, 'add', [1, 1], { dedupe, id: 'x' })).rejects.toThrow(
      /combined with id/,
    );
    await expect(app.queue.enqueue(MathService, 'add', [1, 1], { dedupe, waitable: true })).rejects.toThrow(
      /combined with waitable/,
    );
    await expect(
      app.queue.enqueue(MathService, 'add', [1, 1], { dedupe: { key: 'k', mode: 'debounce', ttlMs: 5 }, delayMs: 5 }),
    ).rejects.toThrow(/drop runAfter and delayMs/);
  });
});
