import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Harness } from '../support/harness.js';

/**
 * Runs enqueued ready now at priority 0 wait in the queue's ready list, all
 * other ready runs in its ready set (lua/includes/ready-list.lua). These
 * tests hold the two to one order, and follow a run dequeued from the list
 * (a tombstone left in place) through every reader.
 */
describe('the ready list beside the ready set', () => {
  let app: Harness;
  beforeEach(async () => {
    app = await Harness.start({});
  });
  afterEach(async () => {
    await app.close();
  });

  const worker = 'host:1:0';
  const enqueue = async (tags: string[], options: { priority?: number } = {}): Promise<string[]> =>
    (
      await app.queue.enqueueMany(
        tags.map((tag) => ({ task: 'OrderService.record', args: [tag], id: tag, ...options })),
      )
    ).map((run) => run.id);
  const claimIds = async (count: number): Promise<string[]> =>
    (await app.backend.claim(['default'], count, worker, 0)).map((run) => run.id);
  const client = () => app.backend.connections.client;
  const readyCount = async () => (await app.backend.counts(['default']))[0]!.ready;

  it('serves runs behind dequeued ones before a run of lower priority', async () => {
    await enqueue(['x', 'y']);
    await enqueue(['z'], { priority: -1 });
    expect((await app.backend.dequeue('x', 'default')).removed).toBe(true);
    const inspected = await app.backend.list('default', 'ready', 0, 10);
    expect(inspected).toEqual(['y', 'z']);
    expect(await claimIds(1)).toEqual(['y']);
    expect(await claimIds(1)).toEqual(['z']);
  });

  it('lists and serves no run of another queue at a dead place whose id was enqueued there since', async () => {
    await enqueue(['x', 'y']);
    expect((await app.backend.dequeue('x', 'default')).removed).toBe(true);
    await app.queue.enqueue('OrderService.record', ['x'], { id: 'x', queue: 'emails' });
    expect(await app.backend.list('default', 'ready', 0, 10)).toEqual(['y']);
    expect(await app.backend.list('emails', 'ready', 0, 10)).toEqual(['x']);
    expect(await readyCount()).toBe(1);
    expect(await claimIds(2)).toEqual(['y']);
  });

  it('serves runs behind more dequeued places than a claim reads at once, in order', async () => {
    const ids = Array.from({ length: 12 }, (_, i) => `r${String(i).padStart(2, '0')}`);
    await enqueue(ids);
    await enqueue(['low'], { priority: -1 });
    // Ten dead places at the head of the list, more than a claim of 3 reads.
    for (const id of ids.slice(0, 10)) expect((await app.backend.dequeue(id, 'default')).removed).toBe(true);
    expect(await readyCount()).toBe(3);
    expect(await claimIds(3)).toEqual(['r10', 'r11', 'low']);
    expect(await readyCount()).toBe(0);
  });

  it('serves the list and the set in one order: priority first, then each run by its place at enqueue', async () => {
    await enqueue(['a1', 'a2', 'a3', 'a4']);
    // a1, claimed and handed back, keeps its place: it returns to the set with its score.
    const [leased] = await app.backend.claim(['default'], 1, worker, 0);
    expect(leased!.id).toBe('a1');
    expect(await app.backend.release([leased!])).toEqual([true]);
    await enqueue(['p1'], { priority: 5 });
    await enqueue(['low'], { priority: -5 });
    await enqueue(['a5']);
    expect(await client().lrange(app.backend.keys.readyList('default'), 0, -1)).toEqual(['a2', 'a3', 'a4', 'a5']);
    expect(await client().zrange(app.backend.keys.ready('default'), 0, -1)).toEqual(['p1', 'a1', 'low']);
    const expected = ['p1', 'a1', 'a2', 'a3', 'a4', 'a5', 'low'];
    expect(await app.backend.list('default', 'ready', 0, 10)).toEqual(expected);
    expect(await app.backend.list('default', 'ready', 2, 3)).toEqual(['a2', 'a3', 'a4']);
    expect(await readyCount()).toBe(7);
    // Claims of two at a time merge the heads of both, window by window.
    const order: string[] = [];
    for (let i = 0; i < 4; i++) order.push(...(await claimIds(2)));
    expect(order).toEqual(expected);
    expect(await readyCount()).toBe(0);
  });

  it('pages the merged order from any offset, each page a slice of the order claims take', async () => {
    // Deferred runs come due into the set with their enqueue-time scores, so
    // they interleave with the list's runs enqueued around them.
    const expected: string[] = [];
    for (let block = 0; block < 6; block++) {
      const tags = Array.from({ length: 40 }, (_, i) => `b${block}r${i}`);
      await enqueue(tags);
      await app.queue.enqueueMany([{ task: 'OrderService.record', args: [`d${block}`], id: `d${block}`, delayMs: 1 }]);
      expected.push(...tags, `d${block}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await app.backend.promote(['default'])).promoted).toBe(6);
    await enqueue(['hi1', 'hi2'], { priority: 3 });
    await enqueue(['lo1'], { priority: -3 });
    const all = await app.backend.list('default', 'ready', 0, 1_000);
    expect(all).toEqual(['hi1', 'hi2', ...expected, 'lo1']);
    for (const offset of [0, 1, 2, 3, 41, 42, 43, 44, 83, 84, 85, 120, 200, 240, 243, 244, 245, 246, 300]) {
      expect(await app.backend.list('default', 'ready', offset, 7)).toEqual(all.slice(offset, offset + 7));
    }
    const claimed: string[] = [];
    for (let i = 0; i < 12; i++) claimed.push(...(await claimIds(23)));
    expect(claimed).toEqual(all);
  });

  it('leaves a run dequeued from the list as a tombstone that counts, pages, ready age and claims skip', async () => {
    await enqueue(['x1', 'x2', 'x3', 'x4', 'x5']);
    expect(await app.backend.dequeue('x2', 'default')).toEqual({ removed: true, status: 'READY' });
    expect(await app.backend.dequeue('x4', 'default')).toEqual({ removed: true, status: 'READY' });
    expect(await app.backend.dequeue('x4', 'default')).toEqual({ removed: false, status: '' });
    expect(await client().llen(app.backend.keys.readyList('default'))).toBe(5);
    expect(await readyCount()).toBe(3);
    expect(await app.backend.list('default', 'ready', 0, 10)).toEqual(['x1', 'x3', 'x5']);
    expect(await app.backend.list('default', 'ready', 1, 1)).toEqual(['x3']);

    // The id can come back: its new place is at the end, its old one stays dead.
    expect(await enqueue(['x2'])).toEqual(['x2']);
    expect(await readyCount()).toBe(4);
    expect(await app.backend.list('default', 'ready', 0, 10)).toEqual(['x1', 'x3', 'x5', 'x2']);

    // Ready age: with x1 gone, the longest-waiting run is x3.
    expect(await app.backend.dequeue('x1', 'default')).toEqual({ removed: true, status: 'READY' });
    const x3 = await app.backend.load('x3');
    expect((await app.backend.readySince('default')).since).toBe(Number(x3!.enqueuedAt));

    expect(await claimIds(10)).toEqual(['x3', 'x5', 'x2']);
    expect(await readyCount()).toBe(0);
    // Every tombstone was consumed by the claim that passed it.
    expect(await client().exists(app.backend.keys.readyList('default'), app.backend.keys.withdrawn('default'))).toBe(0);
  });

  it('skips tombstones a claim meets while merging the list with the set', async () => {
    await enqueue(['m1', 'm2', 'm3', 'm4']);
    await enqueue(['hi'], { priority: 1 });
    await app.backend.dequeue('m1', 'default');
    await app.backend.dequeue('m3', 'default');
    // m1 comes back at a low priority: its dead place must not serve it early.
    await enqueue(['m1'], { priority: -1 });
    expect(await claimIds(2)).toEqual(['hi', 'm2']);
    expect(await claimIds(2)).toEqual(['m4', 'm1']);
    expect(await client().exists(app.backend.keys.withdrawn('default'))).toBe(0);
  });

  it('clears a long row of dead places over several claims, the wake marker kept until the run behind them', async () => {
    const dead = Array.from({ length: 12_000 }, (_, i) => `dead${i}`);
    for (let first = 0; first < dead.length; first += 1_000) await enqueue(dead.slice(first, first + 1_000));
    await enqueue(['behind']);
    for (let first = 0; first < dead.length; first += 500) {
      await Promise.all(dead.slice(first, first + 500).map((id) => app.backend.dequeue(id, 'default')));
    }
    expect(await readyCount()).toBe(1);
    // The first claim buries 10,000 and stops there; the marker still calls a worker.
    expect(await claimIds(5)).toEqual([]);
    expect(await client().hget(app.backend.keys.withdrawn('default'), '')).toBe('2000');
    expect(await client().zrange(app.backend.keys.wake('default'), 0, -1)).toEqual(['w']);
    expect(await claimIds(5)).toEqual(['behind']);
    expect(await client().exists(app.backend.keys.withdrawn('default'), app.backend.keys.wake('default'))).toBe(0);
  });

  it('purges a queue with a ready list, counting only its live runs', async () => {
    await enqueue(['y1', 'y2', 'y3']);
    await enqueue(['y4'], { priority: 2 });
    await app.backend.dequeue('y2', 'default');
    expect(await app.backend.purge('default')).toBe(3);
    const keys = app.backend.keys;
    expect(await client().exists(keys.readyList('default'), keys.withdrawn('default'), keys.ready('default'))).toBe(0);
    expect(await client().hlen(keys.fresh)).toBe(0);
    expect(await readyCount()).toBe(0);
  });
});
