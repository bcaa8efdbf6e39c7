import { Test } from '@nestjs/testing';
import {
  RedisUnavailableError,
  TaskQueue,
  TaskStatus,
  ThreadmillModule,
  UnsafeRedisError,
  type ThreadmillModuleOptions,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { TaskBackend } from '../../libs/threadmill/src/backend/task-backend.js';
import { FIXTURE_QUEUES, FixtureTasksModule, MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

describe('Redis safety', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function server(options: Parameters<typeof RedisServer.start>[0] = {}): Promise<RedisServer> {
    const started = await RedisServer.start({ appendonly: true, ...options });
    cleanup.push(() => started.stop());
    return started;
  }

  /**
   * A Redis these tests kill -9 and expect to come back with every write it
   * confirmed. That takes `appendfsync always`: with `everysec`, Redis
   * postpones its AOF write (for up to 2 s) while a background fsync is still
   * running, yet replies meanwhile, so on a busy disk a confirmed write can
   * die with the process.
   */
  async function crashableServer(): Promise<RedisServer> {
    return server({ appendfsync: 'always' });
  }

  async function boot(options: ThreadmillModuleOptions) {
    const logger = new CapturedLogger();
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ alias: uniqueAlias(), queues: FIXTURE_QUEUES, ...options }),
        FixtureTasksModule,
      ],
    }).compile();
    module.useLogger(logger);
    const error = await module.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!error) cleanup.push(() => module.close());
    return { module, logger, error };
  }

  it('refuses to start on a Redis that may evict keys, unless told to accept it', async () => {
    const redis = await server({ maxmemoryPolicy: 'allkeys-lru' });
    const refused = await boot({ connection: redis.url });
    expect(refused.error).toBeInstanceOf(UnsafeRedisError);
    expect((refused.error as Error).message).toMatch(
      /has maxmemory-policy allkeys-lru: .* Set `maxmemory-policy noeviction` .*or pass allowEviction: true/,
    );

    const allowed = await boot({ connection: redis.url, allowEviction: true });
    expect(allowed.error).toBeUndefined();
    expect(allowed.logger.warnings().join('\n')).toMatch(/maxmemory-policy allkeys-lru: it may evict/);
  });

  it('warns when AOF is off', async () => {
    const redis = await server({ appendonly: false });
    const { error, logger } = await boot({ connection: redis.url });
    expect(error).toBeUndefined();
    expect(logger.warnings().join('\n')).toMatch(/has AOF off \(appendonly no\)/);
  });

  it('warns when Redis has no maxmemory', async () => {
    const redis = await server();
    const { error, logger } = await boot({ connection: redis.url });
    expect(error).toBeUndefined();
    expect(logger.warnings().join('\n')).toMatch(/has no maxmemory: .*Set maxmemory/);
  });

  it('does not warn about a Redis set up as required', async () => {
    const redis = await server({ args: ['--maxmemory', '1gb'] });
    const { error, logger } = await boot({ connection: redis.url });
    expect(error).toBeUndefined();
    expect(logger.warnings()).toEqual([]);
  });

  it('refuses to start on a replica', async () => {
    const primary = await server();
    const replica = await server({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    const { error } = await boot({ connection: replica.url });
    expect(error).toBeInstanceOf(UnsafeRedisError);
    expect((error as Error).message).toMatch(/is a replica: .*Point the connection at the primary/);
  });

  it('fails an enqueue fast during an outage, and never writes it later', async () => {
    const redis = await crashableServer();
    const { module } = await boot({ connection: redis.url, connectTimeoutMs: 400 });
    const queue = module.get(TaskQueue);
    await queue.enqueue(MathService, 'add', [1, 1]);
    await redis.kill('SIGKILL');

    const started = Date.now();
    const error = await queue.enqueue(MathService, 'add', [2, 2]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect(Date.now() - started).toBeLessThan(2_000);

    await redis.restart(); // from its AOF
    await waitUntil(
      'the producer reconnects',
      async () => (await queue.counts(['default']).catch(() => null)) !== null,
    );
    await delay(300);
    // Only the enqueue Redis confirmed is there: nothing was buffered and replayed.
    expect((await queue.counts(['default']))[0]!.ready).toBe(1);
    expect((await queue.enqueue(MathService, 'add', [3, 3])).status).toBe(TaskStatus.READY);
  });

  it('holds many calls through a restart, each answered once, without a listener each', async () => {
    const redis = await crashableServer();
    const { module } = await boot({ connection: redis.url, connectTimeoutMs: 5_000 });
    const queue = module.get(TaskQueue);
    const first = await queue.enqueue(MathService, 'add', [1, 1]);
    // Node warns of a likely leak once an emitter has more than ten listeners for one event.
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    cleanup.push(() => void process.off('warning', onWarning));
    await redis.kill('SIGKILL');
    const { client } = (module.get(TaskBackend) as RedisTaskBackend).connections;
    await waitUntil('the producer sees the outage', () => client.status !== 'ready');

    // An API looking runs up and enqueueing while Redis restarts: every call waits for the connection.
    const lookups = Array.from({ length: 30 }, () => queue.getResult(first.id));
    const enqueues = Array.from({ length: 30 }, (_, i) => queue.enqueue(MathService, 'add', [i, i]));
    await delay(100);
    await redis.restart();
    expect((await Promise.all(lookups)).map((run) => run.id)).toEqual(lookups.map(() => first.id));
    const runs = await Promise.all(enqueues);
    expect(runs.map((run) => run.status)).toEqual(runs.map(() => TaskStatus.READY));
    expect((await queue.counts(['default']))[0]!.ready).toBe(31);
    expect(warnings).toEqual([]);
  });

  it('keeps consuming when its connections are killed (CLIENT KILL TYPE normal)', async () => {
    const redis = await server();
    const app = await Harness.start({ options: { connection: redis.url }, worker: { concurrency: 2 } });
    cleanup.push(() => app.close());
    const admin = new Redis(redis.url);
    cleanup.push(() => admin.disconnect());
    for (let round = 0; round < 5; round++) {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await delay(50);
      const { id } = await waitForEnqueue(() => app.queue.enqueue(MathService, 'add', [round, 1]));
      expect((await app.waitFor(id, undefined, 5_000)).returnValue).toBe(round + 1);
    }
  });

  it('keeps consuming after its blocked wait is unblocked with an error (as in a failover)', async () => {
    const redis = await server();
    const app = await Harness.start({ options: { connection: redis.url }, worker: { concurrency: 2 } });
    cleanup.push(() => app.close());
    const admin = new Redis(redis.url);
    cleanup.push(() => admin.disconnect());
    await waitUntil('the worker blocks', async () => /cmd=bzpopmin/.test((await admin.client('LIST')) as string));
    const clients = (await admin.client('LIST')) as string;
    const blocked = [...clients.matchAll(/id=(\d+) .*cmd=bzpopmin/g)].map((m) => m[1]!);
    expect(blocked.length).toBeGreaterThan(0);
    for (const id of blocked) expect(await admin.client('UNBLOCK', id, 'ERROR')).toBe(1);
    const { id } = await app.queue.enqueue(MathService, 'add', [4, 5]);
    expect((await app.waitFor(id, undefined, 5_000)).returnValue).toBe(9);
  });

  it('resumes consuming within 2 s of Redis coming back from a crash', async () => {
    const redis = await crashableServer();
    const app = await Harness.start({ options: { connection: redis.url }, worker: { concurrency: 2 } });
    cleanup.push(() => app.close());
    const before = await app.queue.enqueue(MathService, 'add', [1, 2]);
    await app.waitFor(before.id);

    await redis.kill('SIGKILL');
    await delay(1_500); // the worker retries meanwhile
    await redis.restart();
    const back = Date.now();
    const { id } = await waitForEnqueue(() => app.queue.enqueue(MathService, 'add', [2, 3]));
    const done = await app.waitFor(id, undefined, 10_000);
    expect(done.returnValue).toBe(5);
    expect(Date.now() - back).toBeLessThan(2_000 + 500);
    // The run finished before its result had any history: the result from before the crash survived (AOF).
    expect((await app.queue.getResult(before.id)).status).toBe(TaskStatus.SUCCESSFUL);
  });
});

/** Retries an enqueue until the producer's connection is back. */
async function waitForEnqueue<T>(enqueue: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await enqueue();
    } catch (error) {
      if (!(error instanceof RedisUnavailableError) || i > 50) throw error;
      await delay(50);
    }
  }
}
