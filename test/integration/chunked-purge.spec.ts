import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PurgeProgress } from '@threadmill/nestjs';
import { TaskInspector } from '@threadmill/nestjs';
import { idRange, signal } from '../support/chunk-race.js';
import { Harness } from '../support/harness.js';

/**
 * A purge runs in bounded chunks (lua/purge.lua), so Redis serves everyone
 * between them. These tests hold it to removing exactly what the queue held
 * when it began, while enqueues and claims land between its chunks.
 */
describe('a purge in chunks', () => {
  let app: Harness;
  beforeEach(async () => {
    app = await Harness.start({});
  });
  afterEach(async () => {
    await app.close();
  });

  const worker = 'host:1:0';
  const enqueue = async (ids: string[], options: { priority?: number; delayMs?: number } = {}): Promise<void> => {
    await app.queue.enqueueMany(ids.map((id) => ({ task: 'OrderService.record', args: [id], id, ...options })));
  };
  const claimIds = async (count: number): Promise<string[]> =>
    (await app.backend.claim(['default'], count, worker, 0)).map((run) => run.id);
  const existing = async (ids: string[]): Promise<Set<string>> => {
    const stored = await app.backend.loadMany(ids);
    return new Set(ids.filter((_, i) => stored[i] !== null));
  };

  it('removes what was there when it began: later runs stay, runs claimed meanwhile keep their leases', async () => {
    const list = idRange('list-', 1500);
    const high = idRange('high-', 300);
    const later = idRange('deferred-', 300);
    await enqueue(list);
    await enqueue(high, { priority: 3 });
    await enqueue(later, { delayMs: 60_000 });
    for (const id of list.slice(0, 40)) await app.backend.dequeue(id, 'default'); // tombstones at the list's head
    const leasedAtStart = await claimIds(50); // the priority-3 runs first
    const before = [...list.slice(40), ...high, ...later].filter((id) => !leasedAtStart.includes(id));

    const chunkSize = 100;
    const chunks: PurgeProgress[] = [];
    const { promise: firstChunk, resolve: began } = signal();
    const purged = app.module.get(TaskInspector).purge('default', {
      chunkSize,
      onProgress: (progress) => {
        chunks.push(progress);
        began();
      },
    });
    // Only after the first chunk: whatever this does happened after the purge began.
    await firstChunk;
    const enqueuedSince: string[] = [];
    const claimedSince: string[] = [];
    for (let round = 0; chunks.at(-1)?.done !== true; round++) {
      const ids = idRange(`new-${round}-`, 20);
      await enqueue(ids.slice(0, 10));
      await enqueue(ids.slice(10, 15), { priority: 5 });
      await enqueue(ids.slice(15), { delayMs: 60_000 });
      enqueuedSince.push(...ids);
      claimedSince.push(...(await claimIds(7)));
    }
    const removed = await purged;

    expect(chunks.length).toBeGreaterThan(10);
    // ZSCAN's COUNT is a hint: one step may return a bucket chain more, a small (listpack) set whole.
    expect(Math.max(...chunks.map((chunk) => chunk.chunkRemoved))).toBeLessThanOrEqual(chunkSize + 128);
    expect(chunks.at(-1)).toMatchObject({ queue: 'default', removed, done: true });
    expect(claimedSince.length).toBeGreaterThan(0);

    const claimedOld = claimedSince.filter((id) => before.includes(id));
    const survivors = new Set([...enqueuedSince, ...claimedSince]);
    expect(removed).toBe(before.length - claimedOld.length + leasedAtStart.length);
    const left = await existing([...before, ...leasedAtStart, ...enqueuedSince]);
    expect([...left].sort()).toEqual([...survivors].sort());
    const leases = new Set((await app.backend.leases('default')).map((lease) => lease.id));
    expect([...leases].sort()).toEqual([...claimedSince].sort());
    const [counts] = await app.backend.counts(['default']);
    expect(counts!.running).toBe(claimedSince.length);
    expect(counts!.ready + counts!.deferred + counts!.running).toBe(survivors.size);
  });

  it('purges a queue of many chunks to nothing, each chunk bounded', async () => {
    await enqueue(idRange('r-', 2000));
    await enqueue(idRange('p-', 500), { priority: -2 });
    await claimIds(30);
    const chunks: number[] = [];
    const removed = await app.module.get(TaskInspector).purge('default', {
      chunkSize: 250,
      onProgress: ({ chunkRemoved }) => chunks.push(chunkRemoved),
    });
    expect(removed).toBe(2500);
    expect(chunks.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...chunks)).toBeLessThanOrEqual(250 + 128);
    const [counts] = await app.backend.counts(['default']);
    expect(counts).toMatchObject({ ready: 0, running: 0, deferred: 0 });
    expect(await app.backend.connections.client.keys(`threadmill:{${app.alias}}:run:*`)).toEqual([]);
    expect(await app.backend.connections.client.hlen(`threadmill:{${app.alias}}:fresh`)).toBe(0);
  });

  it('refuses purge options it does not know, or of the wrong kind, naming each, and purges nothing', async () => {
    await enqueue(idRange('kept-', 3));
    const inspector = app.module.get(TaskInspector);
    await expect(inspector.purge('default', { chunk: 10 } as never)).rejects.toThrow(
      /unknown option "chunk" \(the options are onProgress, chunkSize\)/,
    );
    await expect(inspector.purge('default', { chunkSize: 0, onProgress: 'log' } as never)).rejects.toThrow(
      /onProgress must be a function; chunkSize must be an integer from 1 to 4000, got 0/,
    );
    // A chunk that large would hold Redis too long: refused, not clamped.
    await expect(inspector.purge('default', { chunkSize: 4001 })).rejects.toThrow(
      /Invalid purge options: chunkSize must be an integer from 1 to 4000, got 4001/,
    );
    const [counts] = await app.backend.counts(['default']);
    expect(counts!.ready).toBe(3);
  });
});
