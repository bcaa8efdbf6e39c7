import {
  InvalidEnqueueError,
  InvalidInspectionError,
  TaskResultNotFoundError,
  TaskStatus,
  type TaskResult,
} from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LeasedRun } from '../../../libs/threadmill/src/backend/task-backend.js';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const ids = (runs: readonly { id: string }[]) => runs.map((run) => run.id);
/** The ids of `runs` sorted: runs of several groups or tasks keep one order only within a partition. */
const sorted = (runs: readonly { id: string }[]) => ids(runs).sort();
/** The ids of `runs` that are among `of`, in the order of `runs`. */
const among = (runs: readonly { id: string }[], of: readonly { id: string }[]) =>
  ids(runs).filter((id) => of.some((run) => run.id === id));

describe.each(BACKENDS)('conformance: task limits and limit groups on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work'] });
  });
  afterEach(() => app.close());

  const perCustomer = (customer: string, n: number) => app.queue.enqueue('LimitedService.perCustomer', [customer, n]);
  const claim = (count = 20) => app.backend.claim(['default'], count, 'host:1:0', 0);
  const succeed = (runs: readonly { id: string; queue: string; token: string }[]) =>
    app.backend.acknowledge(runs.map((run) => ({ ...run, outcome: { kind: 'successful', returnValue: '1' } })));

  it("writes the code's limits at boot; sets, shows and removes a task's limit at run time", async () => {
    expect(await app.inspector.taskLimit('LimitedService.perTask')).toEqual({
      rate: { max: 2, perMs: 60_000, startSlackMs: 6_000 },
    });
    expect(await app.inspector.taskLimit('LimitedService.onePerCustomer')).toEqual({ concurrency: 1 });
    expect(await app.inspector.taskLimit('MathService.add')).toBeNull();
    const set = await app.inspector.setTaskLimit('LimitedService.perTask', {
      concurrency: 3,
      rate: { max: 5, perMs: 100 },
    });
    expect(set).toEqual({
      task: 'LimitedService.perTask',
      limit: { concurrency: 3, rate: { max: 5, perMs: 100, startSlackMs: 10 } },
      previous: { rate: { max: 2, perMs: 60_000, startSlackMs: 6_000 } },
    });
    expect(await app.inspector.setTaskLimit('LimitedService.perTask', null)).toMatchObject({ limit: null });
    expect(await app.inspector.taskLimit('LimitedService.perTask')).toBeNull();
  });

  it('refuses a malformed limit, and a key that is not a string of 1-200 characters, with typed errors', async () => {
    for (const bad of [{}, { concurrency: 0 }, { rate: { max: 0, perMs: 1 } }, { concurrency: 1, key: () => 'k' }, 7]) {
      await expect(app.inspector.setTaskLimit('LimitedService.perTask', bad as never)).rejects.toThrow(
        InvalidInspectionError,
      );
    }
    expect(await app.inspector.taskLimit('LimitedService.perTask')).not.toBeNull();
    for (const customer of ['', 'x'.repeat(201)]) {
      const refused = perCustomer(customer, 1);
      await expect(refused).rejects.toThrow(InvalidEnqueueError);
      await expect(refused).rejects.toThrow(/LimitedService\.perCustomer.*limit key/);
    }
    expect((await app.inspector.counts(['default']))[0]!.ready).toBe(0);
  });

  it('leases at most max runs of each key per window, in order, uncharged, beside other keys and tasks', async () => {
    const a = [await perCustomer('A', 1), await perCustomer('A', 2), await perCustomer('A', 3)];
    const free = await app.queue.enqueue('MathService.add', [1, 2]);
    const b = [await perCustomer('B', 1), await perCustomer('B', 2), await perCustomer('B', 3)];
    const more = await app.queue.enqueue('MathService.add', [3, 4]);
    const first = await claim();
    // Two of each key, in enqueue order, and every unlimited run.
    expect(sorted(first)).toEqual(sorted([a[0]!, a[1]!, free, b[0]!, b[1]!, more]));
    expect(among(first, a)).toEqual(ids(a.slice(0, 2)));
    expect(among(first, b)).toEqual(ids(b.slice(0, 2)));
    const unlimited = new Set([free.id, more.id]);
    expect(first.map((run) => run.startWithinMs)).toEqual(
      first.map((run) => (unlimited.has(run.id) ? undefined : 100)),
    );
    await succeed(first);
    // Held back: nothing more of either key this window, even though their runs finished.
    expect(await claim()).toEqual([]);
    for (const held of [a[2]!, b[2]!]) {
      const result = await app.queue.getResult(held.id);
      expect(result.status).toBe(TaskStatus.READY);
      expect(result.attempts).toBe(0);
    }
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 2, running: 0 });
    expect(sorted(await app.inspector.list('default', 'ready'))).toEqual(sorted([a[2]!, b[2]!]));
    // A run enqueued later, of another key, is not held back by them.
    const c = await perCustomer('C', 1);
    expect(ids(await claim())).toEqual([c.id]);
    // A higher limit at run time lets the held ones in, in order.
    await app.inspector.setTaskLimit('LimitedService.perCustomer', { rate: { max: 3, perMs: 60_000 } });
    const rest = await claim();
    expect(sorted(rest)).toEqual(sorted([a[2]!, b[2]!]));
    expect(rest.map((run) => run.attempts)).toEqual([1, 1]);
  });

  it('deduplicates runs of a limit group by their dedupe key, and holds the one stored in its group', async () => {
    const dedupe = { key: 'invoice-7', mode: 'drop' } as const;
    const first = await app.queue.enqueue('LimitedService.perCustomer', ['A', 1], { dedupe });
    const again = await app.queue.enqueue('LimitedService.perCustomer', ['A', 2], { dedupe });
    expect(again.id).toBe(first.id);
    const others = [await perCustomer('A', 3), await perCustomer('A', 4)];
    expect(ids(await claim())).toEqual([first.id, others[0]!.id]);
    expect((await app.queue.getResult(others[1]!.id)).status).toBe(TaskStatus.READY);
  });

  it('holds the task as a whole without a key', async () => {
    const runs = [];
    for (let n = 0; n < 3; n++) runs.push(await app.queue.enqueue('LimitedService.perTask', [n]));
    expect(ids(await claim())).toEqual(ids(runs.slice(0, 2)));
    expect(await claim()).toEqual([]);
    await app.inspector.setTaskLimit('LimitedService.perTask', null);
    expect(ids(await claim())).toEqual([runs[2]!.id]);
  });

  it('leases at most `concurrency` runs of a key at once, and the next of the key when one ends', async () => {
    const one = (customer: string, n: number) => app.queue.enqueue('LimitedService.onePerCustomer', [customer, n]);
    const a = [await one('A', 1), await one('A', 2), await one('A', 3)];
    const b = [await one('B', 1), await one('B', 2)];
    const first = await claim();
    expect(sorted(first)).toEqual(sorted([a[0]!, b[0]!]));
    expect(first.every((run) => run.startWithinMs === undefined)).toBe(true);
    expect(await claim()).toEqual([]);
    // One lease of A ends: the next run of A, and only it.
    const [leasedA, leasedB] = [first.find((run) => run.id === a[0]!.id)!, first.find((run) => run.id === b[0]!.id)!];
    await succeed([leasedA]);
    expect(ids(await claim())).toEqual([a[1]!.id]);
    // A lease handed back unstarted frees its place too.
    expect(await app.backend.release([leasedB])).toEqual([true]);
    expect(ids(await claim())).toEqual([b[0]!.id]);
    // Raising the concurrency lets in one more of each key.
    await app.inspector.setTaskLimit('LimitedService.onePerCustomer', { concurrency: 2 });
    expect(sorted(await claim())).toEqual(sorted([a[2]!, b[1]!]));
    expect(ids(await claim())).toEqual([]);
  });

  it('leases the next run of a key at the very next claim when its lease ends, among 2,000 keys held at their cap', async () => {
    const KEYS = 2_000;
    // Two runs a key: the claims lease the first of each and hold the second back (a concurrency of 1).
    const items = Array.from({ length: 2 * KEYS }, (_, i) => ({
      task: 'LimitedService.onePerCustomer',
      args: [`c${String(Math.floor(i / 2)).padStart(4, '0')}`, i],
    }));
    const stored: TaskResult[] = [];
    for (let i = 0; i < items.length; i += 1_000)
      stored.push(...(await app.queue.enqueueMany(items.slice(i, i + 1_000))));
    const leased: LeasedRun[] = [];
    for (let got = await claim(1_000); got.length > 0; got = await claim(1_000)) leased.push(...got);
    expect(leased).toHaveLength(KEYS);
    // The keys leased last: on Redis, the last its claims looked at, so the last a round of held keys reaches.
    const ends: [string, (run: LeasedRun) => Promise<unknown>][] = [
      ['acknowledged', (run) => succeed([run])],
      ['deferred', (run) => app.backend.defer([{ ...run, delayMs: 60_000 }])],
      ['cancelled', (run) => app.queue.cancel(run.id)],
    ];
    for (const [i, [how, end]] of ends.entries()) {
      const ended = leased.at(-1 - i)!;
      const at = stored.findIndex((run) => run.id === ended.id);
      const next = stored[at + 1]!;
      expect(next.args[0]).toBe(stored[at]!.args[0]);
      await end(ended);
      expect(ids(await claim()), `the claim after a lease ${how}`).toEqual([next.id]);
    }
  });

  it('cancels and purges runs held back by a limit', async () => {
    const a = [
      await perCustomer('A', 1),
      await perCustomer('A', 2),
      await perCustomer('A', 3),
      await perCustomer('A', 4),
    ];
    expect(ids(await claim())).toEqual(ids(a.slice(0, 2)));
    expect(await claim()).toEqual([]);
    expect(await app.queue.cancel(a[2]!.id)).toMatchObject({ cancelled: true });
    expect((await app.queue.getResult(a[2]!.id)).status).toBe(TaskStatus.CANCELLED);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 1, running: 2, cancelled: 1 });
    await app.inspector.dequeue(a[3]!.id);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0 });
    // Nothing of them is left to lease, even once the limit is lifted.
    await app.inspector.setTaskLimit('LimitedService.perCustomer', null);
    expect(await claim()).toEqual([]);
    // A purge removes held-back runs with the rest.
    await app.inspector.setTaskLimit('LimitedService.perCustomer', { rate: { max: 1, perMs: 60_000 } });
    const later = [await perCustomer('B', 1), await perCustomer('B', 2)];
    expect(ids(await claim())).toEqual([later[0]!.id]);
    expect(await claim()).toEqual([]);
    expect(await app.inspector.purge('default')).toBe(5);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, cancelled: 0 });
    await expect(app.queue.getResult(later[1]!.id)).rejects.toThrow(TaskResultNotFoundError);
  });

  it("wakes an idle consumer held back by a key's rate when its window frees a place, not before", async () => {
    await app.inspector.setTaskLimit('LimitedService.perCustomer', {
      rate: { max: 1, perMs: 1_000, startSlackMs: 100 },
    });
    const runs = [await perCustomer('A', 1), await perCustomer('A', 2)];
    const [first] = await claim(1);
    expect(first!.id).toBe(runs[0]!.id);
    const waiter = app.backend.claimWaiter(['default'], 'host:2:0');
    try {
      // Held back until the first claim's window (1.1 s) has passed; the wait
      // would otherwise last a minute. It may wake early once (the enqueue's
      // marker), taking nothing.
      let got = await waiter.claim(1, 0, 60_000);
      if (got.length === 0) got = await waiter.claim(1, 0, 60_000);
      expect(ids(got)).toEqual([runs[1]!.id]);
      expect(got[0]!.claimedAt - first!.claimedAt).toBeGreaterThanOrEqual(1_100);
      expect(got[0]!.claimedAt - first!.claimedAt).toBeLessThan(30_000);
    } finally {
      await waiter.close();
    }
  });

  it('wakes an idle consumer when a lease of a key at its cap ends, not before', async () => {
    const one = (n: number) => app.queue.enqueue('LimitedService.onePerCustomer', ['A', n]);
    await one(1);
    const held = await one(2);
    const [leased] = await claim(1);
    const waiter = app.backend.claimWaiter(['default'], 'host:2:0');
    try {
      // The enqueues' marker ends one wait at most, whose claim takes nothing and clears it.
      expect(await waiter.claim(1, 0, 1_000)).toEqual([]);
      const waiting = waiter.claim(1, 0, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const endedAt = Date.now();
      await succeed([leased!]);
      expect(ids(await waiting)).toEqual([held.id]);
      expect(Date.now() - endedAt).toBeLessThan(30_000);
    } finally {
      await waiter.close();
    }
  });
});
