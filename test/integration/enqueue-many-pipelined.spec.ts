import {
  EnqueueIncompleteError,
  InvalidEnqueueError,
  RedisOutOfMemoryError,
  TaskStatus,
  UnknownTaskError,
  type EnqueueManyItem,
  type TaskResult,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { NewRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

/** `MathService.add(i, 1)` for i in [first, first + count). */
const adds = (count: number, first = 0): EnqueueManyItem[] =>
  Array.from({ length: count }, (_, i) => ({ task: MathService, method: 'add', args: [first + i, 1] }));

/**
 * `enqueueMany(items, { atomic: false })`: validated, encoded and stored in
 * chunks of 128, each chunk one script call (all or nothing), in order. The
 * backend's store stays the real one, against the test Redis; the test only
 * records each call's runs.
 */
describe('enqueueMany with atomic: false', () => {
  let app: Harness;
  let calls: NewRun[][];

  beforeAll(async () => {
    app = await Harness.start();
    const realStore = app.backend.store.bind(app.backend);
    app.backend.store = (runs) => {
      calls.push([...runs]);
      return realStore(runs);
    };
  });
  beforeEach(async () => {
    calls = [];
    await app.queue.counts(); // a live connection before the keys are cleared
    const keys = await app.backend.connections.client.keys(`threadmill:{${app.alias}}:*`);
    if (keys.length > 0) await app.backend.connections.client.del(...keys);
  });
  afterAll(() => app.close());

  const ready = async (): Promise<number> => (await app.queue.counts(['default']))[0]!.ready;
  /** The ids of the default queue's ready list, in claim order. */
  const readyOrder = (): Promise<string[]> =>
    app.backend.connections.client.lrange(app.backend.keys.readyList('default'), 0, -1);

  it('stores a large call in chunks of 128, in order, every run READY with its arguments', async () => {
    const results = await app.queue.enqueueMany(adds(1000), { atomic: false });
    expect(calls.map((c) => c.length)).toEqual([128, 128, 128, 128, 128, 128, 128, 104]);
    expect(calls.flat().map((run) => run.id)).toEqual(results.map((r) => r.id));
    expect(await readyOrder()).toEqual(results.map((r) => r.id));
    const stored = await app.queue.getResults(results.map((r) => r.id));
    expect(stored.map((r) => r?.status)).toEqual(results.map(() => TaskStatus.READY));
    expect(stored.map((r) => r?.args)).toEqual(results.map((_, i) => [i, 1]));
    expect(results.map((r) => r.args)).toEqual(results.map((_, i) => [i, 1]));
  });

  it('sends a call of one chunk or less whole, as an atomic call would', async () => {
    const results = await app.queue.enqueueMany(adds(128), { atomic: false });
    expect(calls.map((c) => c.length)).toEqual([128]);
    expect(await ready()).toBe(results.length);
  });

  it('stops at an invalid item: the chunks before it stay stored and are reported, nothing after', async () => {
    const items = adds(1000);
    items[600] = { ...items[600]!, priority: 1000 };
    const error = await app.queue.enqueueMany(items, { atomic: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(EnqueueIncompleteError);
    const incomplete = error as EnqueueIncompleteError;
    expect(incomplete.cause).toBeInstanceOf(InvalidEnqueueError);
    expect(incomplete.message).toMatch(/stored 512 of 1000 runs, then stopped: .*\(item 600\).*priority/);
    expect(incomplete.storedCount).toBe(512);
    const stored = incomplete.results.slice(0, 512) as TaskResult[];
    expect(stored.every((r) => r?.status === TaskStatus.READY)).toBe(true);
    expect(incomplete.results.slice(512).every((r) => r === null)).toBe(true);
    // Exactly the reported runs are in Redis, in order.
    expect(await readyOrder()).toEqual(stored.map((r) => r.id));
    expect((await app.queue.getResults(stored.map((r) => r.id))).map((r) => r?.args)).toEqual(
      stored.map((_, i) => [i, 1]),
    );
  });

  it('throws the item error itself, and stores nothing, when the first chunk holds the invalid item', async () => {
    const items = adds(600);
    items[101] = { task: MathService, method: 'nothing' as 'add', args: [1, 2] };
    await expect(app.queue.enqueueMany(items, { atomic: false })).rejects.toThrow(UnknownTaskError);
    expect(calls).toEqual([]);
    expect(await ready()).toBe(0);
  });

  it('refuses a caller id given twice anywhere in the call before storing anything', async () => {
    const items = adds(700).map((item, i) => ({ ...item, id: `dup-${i}` }));
    items[650] = { ...items[650]!, id: 'dup-3' };
    await expect(app.queue.enqueueMany(items, { atomic: false })).rejects.toThrow(
      /the id "dup-3" appears twice in one enqueueMany call/,
    );
    expect(calls).toEqual([]);
    expect(await ready()).toBe(0);
  });

  it('returns a caller-chosen id that exists as stored, in any chunk', async () => {
    const [existing] = await app.queue.enqueueMany([
      { task: MathService, method: 'add', args: [-1, -1], id: 'own-300' },
    ]);
    const results = await app.queue.enqueueMany(
      adds(400).map((item, i) => ({ ...item, id: `own-${i}` })),
      { atomic: false },
    );
    expect(results[300]).toMatchObject({ id: 'own-300', args: [-1, -1], enqueuedAt: existing!.enqueuedAt });
    expect(results.filter((_, i) => i !== 300).map((r) => r.args)).toEqual(
      Array.from({ length: 399 }, (_, i) => [i < 300 ? i : i + 1, 1]),
    );
    expect(await ready()).toBe(400);
  });

  it.each([
    ['a string', 'no'],
    ['null', null],
    ['an atomic that is not a boolean', { atomic: 'no' }],
  ])('refuses options that are %s', async (_, options) => {
    await expect(app.queue.enqueueMany(adds(300), options as never)).rejects.toThrow(
      /options must be an object \{ atomic\?: boolean \}/,
    );
    expect(await ready()).toBe(0);
  });
});

describe('enqueueMany with atomic: false, when Redis refuses a chunk', () => {
  let server: RedisServer;
  let app: Harness;

  beforeAll(async () => {
    server = await RedisServer.start();
    app = await Harness.start({ options: { connection: server.url } });
  });
  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  it('reports the runs stored before Redis ran out of memory, and only those are stored', async () => {
    const client = app.backend.connections.client;
    const used = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
    // Room for a few chunks of 128 runs of about 1 KB each (and the query buffers of those in flight), not for ten.
    await client.config('SET', 'maxmemory', String(used + 2_000_000));
    const filler = 'x'.repeat(1_000);
    const items = Array.from({ length: 2_560 }, (_, i) => ({ task: 'EchoService.echo', args: [`${i}:${filler}`] }));
    const error = await app.queue.enqueueMany(items, { atomic: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    await client.config('SET', 'maxmemory', '0');
    expect(error).toBeInstanceOf(EnqueueIncompleteError);
    const incomplete = error as EnqueueIncompleteError;
    expect(incomplete.cause).toBeInstanceOf(RedisOutOfMemoryError);
    expect(((incomplete.cause as Error).cause as Error).message).toMatch(/OOM/);
    expect(incomplete.storedCount).toBeGreaterThan(0);
    expect(incomplete.storedCount).toBeLessThan(items.length);
    // Chunks are refused from the first that does not fit on: the stored runs are a prefix of whole chunks.
    expect(incomplete.storedCount % 128).toBe(0);
    expect(incomplete.results.slice(0, incomplete.storedCount).every((r) => r !== null)).toBe(true);
    expect(incomplete.results.slice(incomplete.storedCount).every((r) => r === null)).toBe(true);
    // Redis holds exactly the runs reported stored.
    expect((await app.queue.counts(['default']))[0]!.ready).toBe(incomplete.storedCount);
    const stored = incomplete.results.slice(0, incomplete.storedCount) as TaskResult[];
    expect((await app.queue.getResults(stored.map((r) => r.id))).map((r) => r?.args)).toEqual(
      stored.map((_, i) => [`${i}:${filler}`]),
    );
  });
});
