import {
  InvalidEnqueueError,
  InvalidWaitError,
  TaskInspector,
  TaskResultNotFoundError,
  TaskStatus,
  WaitTimeoutError,
  type TaskResult,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FailService, MathService, PolicyService, SlowService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/** The CLIENT LIST lines of an application's feed readers (`threadmill:<alias>:finished`). */
async function feedReaders(admin: Redis, alias: string): Promise<string[]> {
  const clients = (await admin.client('LIST')) as string;
  return clients.split('\n').filter((line) => line.includes(` name=threadmill:${alias}:finished `));
}

/** Resolves once run `id` of `alias` is registered for waiting in Redis. */
async function registered(redis: Redis, alias: string, id: string): Promise<void> {
  await waitUntil(
    `run ${id} is registered`,
    async () => (await redis.zscore(`threadmill:{${alias}}:waiting`, id)) !== null,
  );
}

/** Settles `promise` into a value or the error it rejected with, for assertions. */
function outcome<T>(promise: Promise<T>): Promise<T | Error> {
  return promise.catch((error: unknown) => error as Error);
}

describe('TaskQueue.waitFor', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function app(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const started = await Harness.start(...args);
    cleanup.push(() => started.close());
    return started;
  }

  function admin(url = redisUrl()): Redis {
    const client = new Redis(url);
    // Tests restart servers under it: its reconnection errors are expected.
    client.on('error', () => undefined);
    cleanup.push(() => client.disconnect());
    return client;
  }

  /** A Redis these tests kill -9 and restart from its AOF, fsynced on every write. */
  async function crashableServer(): Promise<RedisServer> {
    const server = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
    cleanup.push(() => server.stop());
    return server;
  }

  it('resolves with the result of a run that succeeds, fails or is quarantined, when it settles', async () => {
    const harness = await app({ worker: { concurrency: 2 } });
    // Deferred, so that all are pending when waitFor registers them.
    const sum = await harness.queue.enqueue(MathService, 'add', [2, 3], { delayMs: 300 });
    const failing = await harness.queue.enqueue(FailService, 'alwaysFail', ['boom'], { delayMs: 300 });
    const broken = await harness.queue.enqueue(PolicyService, 'withBrokenPolicy', [], { delayMs: 300 });
    const [succeeded, failed, quarantined] = await Promise.all([
      harness.queue.waitFor<number>(sum.id),
      harness.queue.waitFor(failing.id),
      harness.queue.waitFor(broken.id),
    ]);
    expect(succeeded).toMatchObject({ id: sum.id, status: TaskStatus.SUCCESSFUL, returnValue: 5, attempts: 1 });
    expect(succeeded.finishedAt).toBeInstanceOf(Date);
    expect(failed).toMatchObject({ id: failing.id, status: TaskStatus.FAILED });
    expect(failed.errors.map((error) => error.message)).toEqual(['boom']);
    expect(quarantined).toMatchObject({
      status: TaskStatus.QUARANTINED,
      quarantine: { reason: 'retry-policy-failed' },
    });
    // Both came through the feed, and were unregistered: nobody waits any more, so the key is gone.
    const redis = admin();
    expect(await redis.xlen(`threadmill:{${harness.alias}}:finished`)).toBe(3);
    expect(await redis.exists(`threadmill:{${harness.alias}}:waiting`)).toBe(0);
  });

  it('resolves at once for a run that already finished', async () => {
    const harness = await app({ worker: { concurrency: 2 } });
    const run = await harness.queue.enqueue(MathService, 'add', [20, 22]);
    await harness.waitFor(run.id);
    // Nobody waited while it ran: neither key of waiting exists.
    const redis = admin();
    expect(await redis.exists(`threadmill:{${harness.alias}}:waiting`, `threadmill:{${harness.alias}}:finished`)).toBe(
      0,
    );
    const started = Date.now();
    const result = await harness.queue.waitFor<number>(run.id, { timeoutMs: 30_000 });
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 42 });
    // Answered by its registration, not by a later read of the feed.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('rejects an unknown id with TaskResultNotFoundError', async () => {
    const harness = await app();
    const error = await outcome(harness.queue.waitFor('no-such-run'));
    expect(error).toBeInstanceOf(TaskResultNotFoundError);
    expect((error as TaskResultNotFoundError).id).toBe('no-such-run');
    expect((error as Error).message).toMatch(/never enqueued .*waitable: true/);
  });

  it('rejects with WaitTimeoutError after timeoutMs, leaving the run pending', async () => {
    const harness = await app();
    const run = await harness.queue.enqueue(MathService, 'add', [1, 1]);
    const started = Date.now();
    const error = await outcome(harness.queue.waitFor(run.id, { timeoutMs: 300 }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(295);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ id: run.id, timeoutMs: 300 });
    expect((error as Error).message).toMatch(new RegExp(`"${run.id}" did not settle within 300 ms`));
    expect((await harness.queue.getResult(run.id)).status).toBe(TaskStatus.READY);
  });

  it('stops waiting when its signal aborts, leaving the run and the other waiters alone', async () => {
    const harness = await app({ worker: { concurrency: 2 } });
    const run = await harness.queue.enqueue(MathService, 'add', [4, 4], { delayMs: 400 });
    const stop = new AbortController();
    const aborted = outcome(harness.queue.waitFor(run.id, { signal: stop.signal }));
    const other = harness.queue.waitFor<number>(run.id);
    await registered(admin(), harness.alias, run.id);
    stop.abort(new Error('client went away'));
    expect(await aborted).toMatchObject({ message: 'client went away' });
    // An already aborted signal rejects at once, before anything is registered.
    await expect(harness.queue.waitFor(run.id, { signal: stop.signal })).rejects.toThrow('client went away');
    expect(await other).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 8 });
  });

  it('refuses bad arguments with typed errors, registering nothing', async () => {
    const harness = await app();
    const { queue } = harness;
    await expect(queue.waitFor('')).rejects.toBeInstanceOf(InvalidWaitError);
    await expect(queue.waitFor(42 as unknown as string)).rejects.toThrow(/id must be a string of 1-200 characters/);
    await expect(queue.waitFor('x', { timeoutMs: -5 })).rejects.toThrow(/timeoutMs must be an integer from 1/);
    await expect(queue.waitFor('x', { timeoutMs: Number.NaN })).rejects.toBeInstanceOf(InvalidWaitError);
    await expect(queue.waitFor('x', { timeout: 5 } as never)).rejects.toThrow(/unknown option "timeout"/);
    await expect(queue.waitFor('x', { signal: 'stop' as never })).rejects.toThrow(/signal must be an AbortSignal/);
    await expect(queue.enqueue(MathService, 'add', [1, 2], { waitable: 'yes' as never })).rejects.toThrow(
      InvalidEnqueueError,
    );
    expect(await admin().exists(`threadmill:{${harness.alias}}:waiting`)).toBe(0);
  });

  it('with resultTtlMs 0, gets the result of a waitable run that finished before waitFor was called', async () => {
    const harness = await app({ options: { resultTtlMs: 0 }, worker: { concurrency: 2 } });
    const waitable = await harness.queue.enqueue(MathService, 'add', [3, 4], { waitable: true });
    const plain = await harness.queue.enqueue(MathService, 'add', [5, 6]);
    // Both finish, and nothing of them is kept.
    for (const id of [waitable.id, plain.id]) {
      await waitUntil(`run ${id} is done and deleted`, () =>
        harness.queue.getResult(id).then(
          () => false,
          (error: unknown) => error instanceof TaskResultNotFoundError,
        ),
      );
    }
    expect(await harness.queue.waitFor<number>(waitable.id, { timeoutMs: 5_000 })).toMatchObject({
      id: waitable.id,
      status: TaskStatus.SUCCESSFUL,
      returnValue: 7,
      args: [3, 4],
    });
    await expect(harness.queue.waitFor(plain.id, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(TaskResultNotFoundError);
    // The waited run was settled only to be published: no record or index entry is left behind.
    const redis = admin();
    expect(await redis.exists(`threadmill:{${harness.alias}}:run:${waitable.id}`)).toBe(0);
    expect(await redis.zcard(`threadmill:{${harness.alias}}:q:default:successful`)).toBe(0);
    expect(await redis.hget(`threadmill:{${harness.alias}}:q:default:stats`, 'succeeded')).toBe('2');
  });

  it('registers waitable runs of enqueueMany, atomic and pipelined', async () => {
    const harness = await app({ options: { resultTtlMs: 0 }, worker: { concurrency: 8 } });
    const atomic = await harness.queue.enqueueMany([
      { task: MathService, method: 'add', args: [1, 1], waitable: true },
      { task: MathService, method: 'add', args: [2, 2] },
    ]);
    const pipelined = await harness.queue.enqueueMany(
      Array.from({ length: 200 }, (_, i) => ({ task: 'MathService.add', args: [i, 1], waitable: i % 2 === 0 })),
      { atomic: false },
    );
    const results = await Promise.all(
      [atomic[0]!, ...pipelined.filter((_, i) => i % 2 === 0)].map((run) =>
        harness.queue.waitFor<number>(run.id, { timeoutMs: 15_000 }),
      ),
    );
    expect(results.map((result) => result.returnValue)).toEqual([
      2,
      ...Array.from({ length: 100 }, (_, i) => 2 * i + 1),
    ]);
  });

  it('rejects the waiters of a run that is dequeued or purged', async () => {
    const harness = await app();
    const inspector = harness.module.get(TaskInspector);
    const dequeued = await harness.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 60_000 });
    const purged = await harness.queue.enqueue(MathService, 'multiply', [2, 3]);
    const waits = [dequeued.id, purged.id].map((id) => outcome(harness.queue.waitFor(id)));
    const redis = admin();
    await registered(redis, harness.alias, dequeued.id);
    await registered(redis, harness.alias, purged.id);
    await inspector.dequeue(dequeued.id);
    await inspector.purge('reports');
    const [gone, emptied] = await Promise.all(waits);
    expect(gone).toBeInstanceOf(TaskResultNotFoundError);
    expect((gone as Error).message).toMatch(/it was dequeued while waitFor waited for it/);
    expect(emptied).toBeInstanceOf(TaskResultNotFoundError);
    expect((emptied as Error).message).toMatch(/it was purged while waitFor waited for it/);
  });

  it('serves 1,000 concurrent waiters with one reader connection and no listener warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    cleanup.push(() => void process.off('warning', onWarning));
    const producer = await app();
    const runs = await producer.queue.enqueueMany(
      Array.from({ length: 1_000 }, (_, i) => ({ task: 'MathService.add', args: [i, i] })),
    );
    // Every run waited on twice over: 1,000 waiters for 500 runs, and 500 more on the same runs.
    const waits = [...runs, ...runs.slice(0, 500)].map((run) => producer.queue.waitFor<number>(run.id));
    // Should an assertion below fail, the shutdown rejects them: not an unhandled rejection.
    for (const wait of waits) wait.catch(() => undefined);
    const redis = admin();
    await waitUntil(
      'every run is registered',
      async () => (await redis.zcard(`threadmill:{${producer.alias}}:waiting`)) === 1_000,
    );
    await waitUntil('the reader blocks', async () =>
      (await feedReaders(redis, producer.alias)).some((line) => line.includes('cmd=xread')),
    );
    expect(await feedReaders(redis, producer.alias)).toHaveLength(1);

    await app({ options: { alias: producer.alias }, worker: { concurrency: 32, prefetch: 32 } });
    const results = await Promise.all(waits);
    expect(results.map((result) => result.returnValue)).toEqual([
      ...runs.map((_, i) => 2 * i),
      ...runs.slice(0, 500).map((_, i) => 2 * i),
    ]);
    expect(await feedReaders(redis, producer.alias)).toHaveLength(1);
    expect(warnings).toEqual([]);
  });

  it('ends pending waits at shutdown, closes its reader, and logs no error', async () => {
    const harness = await Harness.start();
    const logger = new CapturedLogger();
    harness.module.useLogger(logger);
    const run = await harness.queue.enqueue(MathService, 'add', [1, 2]);
    const wait = outcome(harness.queue.waitFor(run.id));
    const redis = admin();
    await waitUntil('the reader blocks', async () => (await feedReaders(redis, harness.alias)).length === 1);
    await harness.close();
    const error = await wait;
    expect(error).toBeInstanceOf(InvalidWaitError);
    expect((error as Error).message).toMatch(/shut down while waitFor waited/);
    await waitUntil('the reader is gone', async () => (await feedReaders(redis, harness.alias)).length === 0);
    expect(logger.lines.filter((line) => line.level !== 'log')).toEqual([]);
  });

  describe('through Redis faults', () => {
    it('still resolves across a kill -9 and restart of Redis', async () => {
      const redis = await crashableServer();
      const alias = uniqueAlias();
      const producer = await app({ options: { connection: redis.url, alias, connectTimeoutMs: 5_000 } });
      const run = await producer.queue.enqueue(MathService, 'add', [40, 2]);
      const wait = outcome(producer.queue.waitFor<number>(run.id, { timeoutMs: 30_000 }));
      const probe = admin(redis.url);
      await registered(probe, alias, run.id);
      await waitUntil('the reader blocks', async () => (await feedReaders(probe, alias)).length === 1);

      await redis.kill('SIGKILL');
      await delay(500);
      await redis.restart();
      // A worker that starts after the restart runs it: its outcome is published to the waiter.
      await app({ options: { connection: redis.url, alias }, worker: { concurrency: 2 } });
      const result = await wait;
      expect(result).toMatchObject({ id: run.id, status: TaskStatus.SUCCESSFUL, returnValue: 42 });
    });

    it('rejects instead of hanging when a restart lost the run', async () => {
      const server = await RedisServer.start({ appendonly: false });
      cleanup.push(() => server.stop());
      const alias = uniqueAlias();
      const producer = await app({ options: { connection: server.url, alias, connectTimeoutMs: 5_000 } });
      const run = await producer.queue.enqueue(MathService, 'add', [1, 2]);
      const wait = outcome(producer.queue.waitFor(run.id, { timeoutMs: 30_000 }));
      await registered(admin(server.url), alias, run.id);
      await server.kill('SIGKILL');
      await server.restart(); // empty: no AOF, no snapshot
      const error = await wait;
      expect(error).toBeInstanceOf(TaskResultNotFoundError);
    });

    it('still resolves after its reader connection is killed (CLIENT KILL)', async () => {
      const harness = await app({ worker: { concurrency: 2 } });
      const run = await harness.queue.enqueue(SlowService, 'sleep', [10], { delayMs: 1_500 });
      const wait = harness.queue.waitFor<{ slept: number }>(run.id, { timeoutMs: 30_000 });
      const redis = admin();
      await waitUntil('the reader blocks', async () => (await feedReaders(redis, harness.alias)).length === 1);
      const [reader] = await feedReaders(redis, harness.alias);
      const clientId = /(?:^|\s)id=(\d+)/.exec(reader!)![1]!;
      expect(await redis.client('KILL', 'ID', clientId)).toBe(1);
      const result: TaskResult<{ slept: number }> = await wait;
      expect(result.status).toBe(TaskStatus.SUCCESSFUL);
      expect(result.returnValue?.slept).toBeGreaterThanOrEqual(9);
      // A new connection took the killed one's place: still one reader.
      const readers = await feedReaders(redis, harness.alias);
      expect(readers.length).toBeLessThanOrEqual(1);
      expect(readers.every((line) => !line.includes(`id=${clientId} `))).toBe(true);
    });
  });
});
