import { InvalidInspectionError, TaskStatus } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { UNPARTITIONED_BACKENDS, type Subject } from './backends.js';

describe.each(UNPARTITIONED_BACKENDS)('conformance: rate limits on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work', 'other'] });
  });
  afterEach(() => app.close());

  const enqueue = (queue: string) => app.queue.enqueue('MathService.add', [1, 2], { queue });

  it('sets, shows and removes a limit, with the default start slack', async () => {
    const queue = 'not-deployed-yet';
    expect(await app.inspector.rateLimit(queue)).toBeNull();
    const limit = { max: 50, perMs: 1000, startSlackMs: 100 };
    expect(await app.inspector.setRateLimit(queue, { max: 50, perMs: 1000 })).toEqual({
      queue,
      limit,
      previous: null,
    });
    expect(await app.inspector.queues()).toContain(queue);
    expect((await app.inspector.overview(1)).find((q) => q.queue === queue)).toMatchObject({ rateLimit: limit });
    expect((await app.inspector.overview(1)).find((q) => q.queue === 'default')).toMatchObject({ rateLimit: null });
    const changed = await app.inspector.setRateLimit(queue, { max: 5, perMs: 200, startSlackMs: 0 });
    expect(changed).toEqual({ queue, limit: { max: 5, perMs: 200, startSlackMs: 0 }, previous: limit });
    expect(await app.inspector.setRateLimit(queue, null)).toMatchObject({ limit: null });
    expect(await app.inspector.rateLimit(queue)).toBeNull();
  });

  it('refuses a malformed limit with a typed error naming what is wrong, and writes nothing', async () => {
    const bad = [{ max: 0, perMs: 1000 }, { max: 5, perMs: 1.5 }, { max: 5, perMs: 10, startSlackMs: -1 }, 7];
    for (const limit of bad) {
      await expect(app.inspector.setRateLimit('work', limit as never)).rejects.toThrow(InvalidInspectionError);
    }
    await expect(app.inspector.setRateLimit('work', { max: 0, perMs: 1000 })).rejects.toThrow(/max must be/);
    expect(await app.inspector.rateLimit('work')).toBeNull();
  });

  it('leases at most max runs of a limited queue per window, in order, uncharged, beside other queues', async () => {
    const [queue, other] = ['work', 'other'];
    await app.inspector.setRateLimit(queue, { max: 3, perMs: 60_000, startSlackMs: 100 });
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await enqueue(queue));
    const elsewhere = [await enqueue(other), await enqueue(other)];
    const first = await app.backend.claim([queue, other], 10, 'host:1:0', 0);
    const limited = first.filter((run) => run.queue === queue);
    expect(limited.map((run) => run.id)).toEqual(runs.slice(0, 3).map((run) => run.id));
    expect(limited.map((run) => run.startWithinMs)).toEqual([100, 100, 100]);
    expect(first.filter((run) => run.queue === other).map((run) => run.id)).toEqual(elsewhere.map((run) => run.id));
    expect(first.find((run) => run.queue === other)!.startWithinMs).toBeUndefined();
    // The window is full: nothing more of the queue, even after those runs finished.
    await app.backend.acknowledge(
      limited.map((run) => ({ ...run, outcome: { kind: 'successful', returnValue: '3' } as const })),
    );
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    const held = await app.queue.getResult(runs[3]!.id);
    expect(held.status).toBe(TaskStatus.READY);
    expect(held.attempts).toBe(0);
    // A run handed back unstarted keeps its place in the window: the limit errs towards fewer starts.
    await app.inspector.setRateLimit(queue, { max: 4, perMs: 60_000, startSlackMs: 100 });
    const [fourth] = await app.backend.claim([queue], 10, 'host:1:0', 0);
    expect(fourth!.id).toBe(runs[3]!.id);
    expect(await app.backend.release([fourth!])).toEqual([true]);
    expect(await app.backend.claim([queue], 10, 'host:1:0', 0)).toEqual([]);
    // Removing the limit lets the rest in, in order.
    await app.inspector.setRateLimit(queue, null);
    const rest = await app.backend.claim([queue], 10, 'host:1:0', 0);
    expect(rest.map((run) => run.id)).toEqual([runs[3]!.id, runs[4]!.id]);
    expect(rest.map((run) => run.attempts)).toEqual([1, 1]);
    expect(rest[0]!.startWithinMs).toBeUndefined();
  });

  it('wakes an idle consumer held back by the limit when the window frees a place, not before', async () => {
    const queue = 'work';
    await app.inspector.setRateLimit(queue, { max: 1, perMs: 1_000, startSlackMs: 100 });
    const runs = [await enqueue(queue), await enqueue(queue)];
    const [first] = await app.backend.claim([queue], 1, 'host:1:0', 0);
    const claimedAt = first!.claimedAt;
    expect(first!.id).toBe(runs[0]!.id);
    const waiter = app.backend.claimWaiter([queue], 'host:2:0');
    try {
      // Held back until the first claim's window (1.1 s) has passed; the wait
      // would otherwise last a minute. It may wake early once (the enqueue's
      // marker), taking nothing.
      let got = await waiter.claim(1, 0, 60_000);
      if (got.length === 0) got = await waiter.claim(1, 0, 60_000);
      expect(got.map((run) => run.id)).toEqual([runs[1]!.id]);
      expect(got[0]!.claimedAt - claimedAt).toBeGreaterThanOrEqual(1_100);
      expect(got[0]!.claimedAt - claimedAt).toBeLessThan(30_000);
    } finally {
      await waiter.close();
    }
  });
});
