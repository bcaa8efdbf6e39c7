import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequeueAllProgress } from '@threadmill/nestjs';
import { InvalidInspectionError, TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { LUA_SOURCES } from '../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import type { Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import { redisUrl } from '../support/backend.js';
import { idRange, signal } from '../support/chunk-race.js';
import { Harness } from '../support/harness.js';
import { ReplyDropProxy } from '../support/reply-drop-proxy.js';

const REQUEUE_ALL_SHA = createHash('sha1').update(LUA_SOURCES.requeueAll).digest('hex');
const WORKER = 'chunked-requeue:1:0';
const error = { errorClass: 'Error', message: 'boom', stack: '', attempt: 1 };

/**
 * A requeue of a whole segment runs in bounded chunks (lua/requeue-all.lua),
 * so Redis serves everyone between them. These tests hold it to requeueing
 * exactly what the segment held when it began, each run once, while runs
 * fail, are enqueued and are claimed between its chunks.
 */
describe('a requeue of a segment in chunks', () => {
  let app: Harness | undefined;
  let proxy: ReplyDropProxy | undefined;
  afterEach(async () => {
    await app?.close();
    await proxy?.stop();
    app = proxy = undefined;
  });

  const enqueue = async (ids: string[]): Promise<void> => {
    for (let i = 0; i < ids.length; i += 5000) {
      const items = ids.slice(i, i + 5000).map((id) => ({ task: 'OrderService.record', args: [id], id }));
      await app!.queue.enqueueMany(items);
    }
  };
  /** Claims up to `count` ready runs and settles them with `outcome`; returns their ids. */
  const settle = async (
    count: number,
    outcome: Outcome = { kind: 'failed', error },
    resultTtlMs?: number,
  ): Promise<string[]> => {
    const ids: string[] = [];
    while (ids.length < count) {
      const leased = await app!.backend.claim(['default'], Math.min(count - ids.length, 2000), WORKER, 0);
      if (leased.length === 0) break;
      const acks = leased.map((run) => ({ id: run.id, queue: 'default', token: run.token, outcome, resultTtlMs }));
      expect(await app!.backend.acknowledge(acks)).toEqual(acks.map(() => true));
      ids.push(...leased.map((run) => run.id));
    }
    return ids;
  };
  const statuses = async (ids: string[]): Promise<Map<string, string>> => {
    const stored = await app!.backend.loadMany(ids);
    return new Map(ids.map((id, i) => [id, stored[i]?.['status'] ?? (stored[i] ? 'READY' : 'GONE')]));
  };

  it('requeues exactly the failed runs of its start, each once, while runs fail, enqueue and are claimed', async () => {
    app = await Harness.start({});
    const original = idRange('f-', 20_000);
    await enqueue(original);
    expect(await settle(original.length)).toHaveLength(original.length);

    const chunkSize = 500;
    const chunks: RequeueAllProgress[] = [];
    const { promise: firstChunk, resolve: began } = signal();
    const requeueing = app.module.get(TaskInspector).requeueAll('default', 'failed', {
      chunkSize,
      onProgress: (progress) => {
        chunks.push(progress);
        began();
      },
    });
    // Only after the first chunk: whatever this does happened after the requeue began.
    await firstChunk;
    const enqueuedSince: string[] = [];
    const failedSince: string[] = [];
    for (let round = 0; chunks.at(-1)?.done !== true; round++) {
      const ids = idRange(`n-${round}-`, 20);
      await enqueue(ids);
      enqueuedSince.push(...ids);
      // Claims take the oldest ready runs: originals requeued a chunk ago, which fail again.
      failedSince.push(...(await settle(10)));
    }
    const requeued = await requeueing;
    // Each chunk is bounded by what it requeues (its time, measured where the machine is quiet, is in
    // docs/scale.md: a bound on time here would fail whenever the machine is busy).

    expect(chunks.length).toBeGreaterThanOrEqual(original.length / chunkSize);
    expect(Math.max(...chunks.map((chunk) => chunk.chunkRequeued))).toBeLessThanOrEqual(chunkSize);
    expect(chunks.at(-1)).toMatchObject({ queue: 'default', segment: 'failed', requeued, done: true });
    expect(failedSince.length).toBeGreaterThan(0);
    // Every original exactly once: those that failed again since are not requeued a second time.
    expect(requeued).toBe(original.length);
    expect((await app.backend.stats('default'))['requeued']).toBe(original.length);
    const now = await statuses([...original, ...enqueuedSince]);
    const again = new Set(failedSince);
    for (const id of [...original, ...enqueuedSince]) {
      expect(now.get(id), id).toBe(again.has(id) ? TaskStatus.FAILED : TaskStatus.READY);
    }
    const [counts] = await app.backend.counts(['default']);
    expect(counts).toMatchObject({ failed: failedSince.length, running: 0 });
    expect(counts!.ready).toBe(original.length + enqueuedSince.length - failedSince.length);
  });

  it('requeues the quarantined and cancelled segments, and failures of TTL classes, and none of another segment', async () => {
    app = await Harness.start({});
    await enqueue(idRange('q-', 300));
    await settle(300, { kind: 'quarantine', reason: 'invalid-arguments', message: 'bad' });
    await enqueue(idRange('c-', 40));
    for (const id of idRange('c-', 40)) await app.queue.cancel(id);
    await enqueue(idRange('f-', 30));
    await settle(30);
    const inspector = app.module.get(TaskInspector);
    // Failures of tasks with TTLs of their own: in the failed indexes of two TTL classes.
    await enqueue([...idRange('t1-', 70), ...idRange('t2-', 90)]);
    expect(await settle(70, undefined, 60_000)).toHaveLength(70);
    expect(await settle(90, undefined, 120_000)).toHaveLength(90);
    expect(await inspector.requeueAll('default', 'failed', { chunkSize: 25 })).toBe(190);
    expect(await settle(30)).toHaveLength(30);
    const progress: number[] = [];
    const quarantined = await inspector.requeueAll('default', 'quarantined', {
      chunkSize: 64,
      onProgress: ({ chunkRequeued }) => progress.push(chunkRequeued),
    });
    expect(quarantined).toBe(300);
    expect(progress.length).toBeGreaterThanOrEqual(5);
    expect(await inspector.requeueAll('default', 'cancelled')).toBe(40);
    expect((await app.backend.counts(['default']))[0]).toMatchObject({ quarantined: 0, cancelled: 0, failed: 30 });
    const runs = await statuses([
      ...idRange('q-', 300),
      ...idRange('c-', 40),
      ...idRange('t1-', 70),
      ...idRange('t2-', 90),
    ]);
    expect(new Set(runs.values())).toEqual(new Set([TaskStatus.READY]));
    expect(await inspector.requeueAll('default', 'quarantined')).toBe(0);
  });

  it('answers as its first copy did when a chunk’s reply is lost: no run requeued twice', async () => {
    proxy = await ReplyDropProxy.start(redisUrl());
    app = await Harness.start({ options: { connection: proxy.url } });
    const original = idRange('l-', 2000);
    await enqueue(original);
    await settle(original.length);
    let chunk = 0;
    const requeued = await app.module.get(TaskInspector).requeueAll('default', 'failed', {
      chunkSize: 300,
      // The first call goes whole (EVAL); the third one's reply is lost, and its resent copy replays.
      onProgress: () => {
        if (++chunk === 2) proxy!.dropNextReplyTo(REQUEUE_ALL_SHA);
      },
    });
    expect(proxy.dropped).toBe(1);
    expect(requeued).toBe(original.length);
    expect((await app.backend.stats('default'))['requeued']).toBe(original.length);
    expect((await app.backend.counts(['default']))[0]).toMatchObject({ ready: original.length, failed: 0 });
  });

  it('refuses a segment, options or a chunk size it does not take, naming each, and requeues nothing', async () => {
    app = await Harness.start({});
    await enqueue(idRange('k-', 3));
    await settle(3);
    const inspector = app.module.get(TaskInspector);
    await expect(inspector.requeueAll('default', 'ready' as never)).rejects.toThrow(
      /requeueAll takes segment failed, quarantined, cancelled, got "ready"/,
    );
    await expect(inspector.requeueAll('default', 'failed', { chunk: 10 } as never)).rejects.toThrow(
      /unknown option "chunk" \(the options are onProgress, chunkSize\)/,
    );
    await expect(inspector.requeueAll('default', 'failed', { chunkSize: 4001 })).rejects.toThrow(
      /Invalid requeueAll options: chunkSize must be an integer from 1 to 4000, got 4001/,
    );
    await expect(inspector.purge('default', { chunkSize: 5000 })).rejects.toBeInstanceOf(InvalidInspectionError);
    expect((await app.backend.counts(['default']))[0]).toMatchObject({ failed: 3 });
  });
});
