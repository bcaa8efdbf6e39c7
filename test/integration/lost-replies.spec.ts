import { InvalidRunStateError, TaskInspector, TaskResultNotFoundError, TaskStatus } from '@threadmill/nestjs';
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { LUA_SOURCES } from '../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import type { Acknowledgement, LeasedRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { MathService } from '../fixtures/fixture-tasks.js';
import { redisUrl } from '../support/backend.js';
import { Harness, type HarnessOptions } from '../support/harness.js';
import { ReplyDropProxy } from '../support/reply-drop-proxy.js';
import { handWritten } from '../support/stored-payload.js';
import { waitUntil } from '../support/wait.js';

/** What an EVALSHA of a script carries: the script's SHA1. */
const sha = (source: string): string => createHash('sha1').update(source).digest('hex');
const CLAIM_SHA = sha(LUA_SOURCES.claim);
const ACK_SHA = sha(LUA_SOURCES.acknowledge);
const REQUEUE_SHA = sha(LUA_SOURCES.requeue);
const DEQUEUE_SHA = sha(LUA_SOURCES.dequeue);
const PURGE_SHA = sha(LUA_SOURCES.purge);
const RELEASE_SHA = sha(LUA_SOURCES.release);

/**
 * Per test: a fresh proxy, and `start` for the harness the test runs through
 * it (closed after the test).
 */
function perTestProxy(): { readonly proxy: ReplyDropProxy; start(config?: HarnessOptions): Promise<Harness> } {
  let proxy: ReplyDropProxy | undefined;
  let app: Harness | undefined;
  beforeEach(async () => {
    proxy = await ReplyDropProxy.start(redisUrl());
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await proxy?.stop();
  });
  return {
    get proxy() {
      return proxy!;
    },
    async start({ options, ...config } = {}) {
      app = await Harness.start({ ...config, options: { ...options, connection: proxy!.url } });
      return app;
    },
  };
}

/**
 * The connection drops after Redis ran an enqueue and before its reply came
 * back. ioredis then resends the command on reconnect, so Redis runs it twice:
 * each run must still be stored once (one ready entry, counted once) and the
 * caller must get its runs as created.
 */
describe('an enqueue whose reply is lost', () => {
  let proxy: ReplyDropProxy;
  let app: Harness;
  beforeAll(async () => {
    proxy = await ReplyDropProxy.start(redisUrl());
    app = await Harness.start({ options: { connection: proxy.url } });
    // Load the scripts, so that the armed request is the script call itself.
    await app.queue.enqueue(MathService, 'add', [0, 0]);
  });
  afterAll(async () => {
    await app.close();
    await proxy.stop();
  });
  beforeEach(async () => {
    await app.backend.purge('default');
  });

  /** Leases everything ready on `default`: the ids a worker would run, in order, repeats included. */
  async function claimAll(): Promise<string[]> {
    const ids: string[] = [];
    for (;;) {
      const batch = await app.backend.claim(['default'], 500, 'lost-replies:1:0', 0);
      if (batch.length === 0) return ids;
      ids.push(...batch.map((run) => run.id));
    }
  }

  async function enqueuedCount(): Promise<number> {
    return (await app.backend.stats('default')).enqueued ?? 0;
  }

  it('stores a single run once', async () => {
    const before = await enqueuedCount();
    proxy.dropNextReplyTo('evalsha');
    const run = await app.queue.enqueue(MathService, 'add', [1, 2]);
    expect(proxy.dropped).toBe(1);
    expect(run.status).toBe(TaskStatus.READY);
    expect(await enqueuedCount()).toBe(before + 1);
    expect(await claimAll()).toEqual([run.id]);
  });

  it('stores every run of a bulk call once, in order', async () => {
    const before = await enqueuedCount();
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo('evalsha');
    const runs = await app.queue.enqueueMany(
      Array.from({ length: 300 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    expect(proxy.dropped).toBe(dropped + 1);
    expect(runs.every((run) => run.status === TaskStatus.READY)).toBe(true);
    expect(await enqueuedCount()).toBe(before + 300);
    expect(await claimAll()).toEqual(runs.map((run) => run.id));
  });

  it('stores a caller-chosen id once and answers that the call created it', async () => {
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo('evalsha');
    const id = `order-${Date.now()}`;
    const stored = await app.backend.store([handWritten(id, '{"v":1,"task":"MathService.add","args":[3,4]}')]);
    expect(proxy.dropped).toBe(dropped + 1);
    // The resent copy finds the id taken by its own first copy: created all the same.
    expect(stored.created).toEqual([true]);
    expect(await app.queue.getResult(id)).toMatchObject({ id, status: TaskStatus.READY, args: [3, 4] });
    expect(await claimAll()).toEqual([id]);
  });
});

/**
 * The same for a claim: Redis leased runs to the consumer, which never saw
 * them. The resent claim must hand the consumer those runs, not leave them
 * leased to nobody until their lease expires and they come back as a failed
 * attempt that never ran.
 */
describe('a claim whose reply is lost', () => {
  const WORKER = 'lost-replies:2:0';
  const rig = perTestProxy();

  it('gives the resent claim the runs the first copy leased, and leases nothing else', async () => {
    const { queue, backend } = await rig.start();
    const { proxy } = rig;
    // Load the claim script, so that the armed request is the script call itself.
    expect(await backend.claim(['default'], 4, WORKER, 0)).toEqual([]);
    const runs = await queue.enqueueMany(
      Array.from({ length: 10 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, 1] })),
    );
    proxy.dropNextReplyTo(CLAIM_SHA);
    const claimed = await backend.claim(['default'], 4, WORKER, 1);
    expect(proxy.dropped).toBe(1);
    expect(claimed.map((run) => run.id)).toEqual(runs.slice(0, 4).map((run) => run.id));
    const leases = await backend.leases('default');
    expect(leases.map((lease) => lease.id).sort()).toEqual(claimed.map((run) => run.id).sort());
    expect((await backend.counts(['default']))[0]).toMatchObject({ ready: 6, running: 4 });
    // The runs are the consumer's to settle: their leases hold.
    expect(await backend.release(claimed)).toEqual([true, true, true, true]);
  });

  it('recognises both of two claims in flight whose replies a dropped connection lost', async () => {
    const { queue, backend } = await rig.start();
    const { proxy } = rig;
    await queue.enqueueMany(
      Array.from({ length: 10 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    // Both claims reach Redis and run; the connection drops before either reply arrives.
    proxy.dropNextReplyTo(CLAIM_SHA, { lingerMs: 50 });
    const [first, second] = await Promise.all([
      backend.claim(['default'], 3, WORKER, 0),
      backend.claim(['default'], 3, WORKER, 1),
    ]);
    expect(proxy.dropped).toBeGreaterThanOrEqual(1);
    const ids = [...first, ...second].map((run) => run.id);
    expect(new Set(ids).size).toBe(6);
    // Every lease Redis holds is one the consumer got back: none is left to nobody.
    expect((await backend.leases('default')).map((lease) => lease.id).sort()).toEqual([...ids].sort());
    expect((await backend.counts(['default']))[0]).toMatchObject({ ready: 4, running: 6 });
    expect(await backend.release([...first, ...second])).toEqual(ids.map(() => true));
  });

  it('answers a resent release as its first copy: released', async () => {
    const { queue, backend } = await rig.start();
    const { proxy } = rig;
    await queue.enqueueMany(
      Array.from({ length: 3 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    const [warm, ...held] = await backend.claim(['default'], 3, WORKER, 0);
    // Load the release script (its first call goes whole, as EVAL).
    expect(await backend.release([warm!])).toEqual([true]);
    proxy.dropNextReplyTo(RELEASE_SHA);
    expect(await backend.release(held)).toEqual([true, true]);
    expect(proxy.dropped).toBe(1);
    expect((await backend.counts(['default']))[0]).toMatchObject({ ready: 3, running: 0 });
  });

  it('runs every task once when a worker loses a claim reply', async () => {
    // A lease long enough that a loaded machine still renews it in time; a
    // lost lease would still fail the run (no retry policy), only later.
    const app = await rig.start({ options: { leaseTtlMs: 3_000 }, worker: { concurrency: 4, prefetch: 4 } });
    const { queue } = app;
    const { proxy } = rig;
    // The worker is idle and blocked: the enqueue wakes it, and its claim's reply is lost.
    proxy.dropNextReplyTo(CLAIM_SHA);
    const runs = await queue.enqueueMany(
      Array.from({ length: 40 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    await waitUntil('the claim reply was lost', () => proxy.dropped === 1);
    const results = await Promise.all(runs.map((run) => app.waitFor(run.id)));
    // A run the first copy leased and nobody ran would have waited out its
    // lease and finished FAILED (the task has no retry policy).
    expect(results.map((result) => [result.status, result.attempts])).toEqual(
      runs.map(() => [TaskStatus.SUCCESSFUL, 1]),
    );
    expect(results.map((result) => result.returnValue)).toEqual(runs.map((_, i) => 2 * i));
  });
});

/** Plain successes of `runs`, as a worker acknowledges them. */
const successes = (runs: readonly LeasedRun[]): Acknowledgement[] =>
  runs.map((run) => ({
    id: run.id,
    queue: run.queue,
    token: run.token,
    outcome: { kind: 'successful', returnValue: undefined },
  }));

/** The queue's count of discarded (stale) acknowledgements. */
const staleAcks = async (backend: RedisTaskBackend): Promise<number> =>
  (await backend.stats('default'))['staleAcks'] ?? 0;

/**
 * The same for an acknowledgement: Redis applied the outcomes, and the resent
 * copy finds their leases gone. It must answer what the first copy did, not
 * report every outcome stale (a false warning, `staleAcks` counted, and the
 * outcome events of runs that did finish never emitted).
 */
describe('an acknowledgement whose reply is lost', () => {
  const WORKER = 'lost-replies:3:0';
  const rig = perTestProxy();

  /** Enqueues `n` runs and claims them; the acknowledge script is loaded by settling an extra run first. */
  async function claimed(n: number): Promise<{ app: Harness; backend: RedisTaskBackend; runs: LeasedRun[] }> {
    const app = await rig.start();
    const { queue, backend } = app;
    await backend.purge('default');
    await queue.enqueueMany(
      Array.from({ length: n + 1 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, 1] })),
    );
    const [first, ...runs] = await backend.claim(['default'], n + 1, WORKER, 0);
    expect(await backend.acknowledge(successes([first!]))).toEqual([true]);
    return { app, backend, runs };
  }

  it('answers the resent copy as the first: applied, nothing counted stale', async () => {
    const { app, backend, runs } = await claimed(3);
    const { proxy } = rig;
    const before = await staleAcks(backend);
    proxy.dropNextReplyTo(ACK_SHA);
    expect(await backend.acknowledge(successes(runs))).toEqual([true, true, true]);
    expect(proxy.dropped).toBe(1);
    expect(await staleAcks(backend)).toBe(before);
    const results = await Promise.all(runs.map((run) => app.queue.getResult(run.id)));
    expect(results.map((result) => result.status)).toEqual(runs.map(() => TaskStatus.SUCCESSFUL));
  });

  it('answers a batch sent again after a failure as the first copy, and another call as stale', async () => {
    const { backend, runs } = await claimed(3);
    const before = await staleAcks(backend);
    // The first copy finds the first lease released already: that one was stale.
    expect(await backend.release(runs.slice(0, 1))).toEqual([true]);
    const batch = successes(runs);
    expect(await backend.acknowledge(batch)).toEqual([false, true, true]);
    expect(await backend.acknowledge(batch)).toEqual([false, true, true]);
    expect(await staleAcks(backend)).toBe(before + 1);
    // Another call carrying the same outcomes is not a copy: its leases are gone.
    expect(await backend.acknowledge(successes(runs))).toEqual([false, false, false]);
    expect(await staleAcks(backend)).toBe(before + 4);
  });

  it('counts no stale acknowledgement when a worker loses an acknowledgement reply', async () => {
    const app = await rig.start({ worker: { concurrency: 4, prefetch: 4 } });
    const { queue, backend } = app;
    const { proxy } = rig;
    // One run first, so that the scripts are loaded and the armed request is the script call itself.
    await app.waitFor((await queue.enqueue(MathService, 'add', [0, 0])).id);
    const before = await backend.stats('default');
    proxy.dropNextReplyTo(ACK_SHA);
    const runs = await queue.enqueueMany(
      Array.from({ length: 40 }, (_, i) => ({ task: MathService, method: 'add' as const, args: [i, i] })),
    );
    const results = await Promise.all(runs.map((run) => app.waitFor(run.id)));
    expect(proxy.dropped).toBe(1);
    expect(results.map((result) => [result.status, result.attempts])).toEqual(
      runs.map(() => [TaskStatus.SUCCESSFUL, 1]),
    );
    const after = await backend.stats('default');
    expect(after['staleAcks'] ?? 0).toBe(before['staleAcks'] ?? 0);
    expect((after['succeeded'] ?? 0) - (before['succeeded'] ?? 0)).toBe(40);
  });
});

/**
 * The same for an operator's requeue, dequeue or purge (the dashboard's
 * buttons, the terminal inspector's keys): the resent copy finds the run
 * READY, or gone, or nothing left to purge, and must answer as the first.
 */
describe('a requeue, dequeue or purge whose reply is lost', () => {
  const rig = perTestProxy();

  /** A producer through the proxy, its inspector, and two READY runs on an emptied queue. */
  async function twoRuns() {
    const app = await rig.start();
    await app.backend.purge('default');
    const [run, other] = await app.queue.enqueueMany([
      { task: MathService, method: 'add', args: [1, 1] },
      { task: MathService, method: 'add', args: [2, 2] },
    ]);
    const inspector = app.module.get(TaskInspector);
    return { queue: app.queue, backend: app.backend, inspector, run: run!, other: other! };
  }

  it('reports the run requeued', async () => {
    const { backend, inspector, run, other } = await twoRuns();
    const [leased] = await backend.claim(['default'], 1, 'lost-replies:4:0', 0);
    const error = { errorClass: 'Error', message: 'boom', stack: '', attempt: 1 };
    const failure = {
      id: run.id,
      queue: 'default',
      token: leased!.token,
      outcome: { kind: 'failed', error },
    } as const;
    expect(await backend.acknowledge([failure])).toEqual([true]);
    // Load the requeue script (ioredis sends a script's first call whole, as
    // EVAL), so that the armed request is the script call itself.
    await expect(inspector.requeue(other.id)).rejects.toBeInstanceOf(InvalidRunStateError);
    rig.proxy.dropNextReplyTo(REQUEUE_SHA);
    const requeued = await inspector.requeue(run.id);
    expect(rig.proxy.dropped).toBe(1);
    expect(requeued).toMatchObject({ id: run.id, status: TaskStatus.READY, attempts: 1 });
    expect((await backend.stats('default'))['requeued']).toBe(1);
  });

  it('reports the run removed', async () => {
    const { queue, backend, inspector, run, other } = await twoRuns();
    // Load the dequeue script (its first call goes whole, as EVAL), so that
    // the armed request is the script call itself.
    await inspector.dequeue(other.id);
    rig.proxy.dropNextReplyTo(DEQUEUE_SHA);
    await inspector.dequeue(run.id);
    expect(rig.proxy.dropped).toBe(1);
    await expect(queue.getResult(run.id)).rejects.toBeInstanceOf(TaskResultNotFoundError);
    expect((await backend.stats('default'))['dequeued']).toBe(2);
  });

  it('reports the runs purged', async () => {
    const { backend, inspector } = await twoRuns();
    // The purge script ran once already (twoRuns empties the queue): the
    // armed request is the script call itself.
    rig.proxy.dropNextReplyTo(PURGE_SHA);
    expect(await inspector.purge('default')).toBe(2);
    expect(rig.proxy.dropped).toBe(1);
    expect((await backend.counts(['default']))[0]).toMatchObject({ ready: 0 });
  });
});
