import { Controller, Get, Inject, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { ThreadmillModule, TaskInspector, TaskQueue } from '@threadmill/nestjs';
import { ThreadmillHealthIndicator, ThreadmillHealthModule } from '@threadmill/nestjs/health';
import { RedisServer } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { waitUntil } from '../support/wait.js';

/** How old a ready run may get before the queue is unhealthy, in these tests. */
const MAX_AGE_MS = 300;

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(ThreadmillHealthIndicator) private readonly threadmill: ThreadmillHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.threadmill.isRedisReachable('redis', { timeoutMs: 500 }),
      () => this.threadmill.areWorkersAlive('workers', { queues: ['default'], timeoutMs: 500 }),
      () => this.threadmill.isQueueAgeUnder('queues', MAX_AGE_MS, { queues: ['default'], timeoutMs: 500 }),
    ]);
  }
}

describe('health indicators (@nestjs/terminus)', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function start({ worker, connection = redisUrl() }: { worker: boolean; connection?: string }) {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection, alias: uniqueAlias('health'), queues: FIXTURE_QUEUES }),
        FixtureTasksModule,
        TerminusModule.forRoot({ logger: false }),
        ThreadmillHealthModule,
      ],
      controllers: [HealthController],
    }).compile();
    const app: INestApplication = module.createNestApplication({ logger: false });
    if (worker) {
      // A hybrid application: the worker beside the HTTP server.
      app.connectMicroservice({
        strategy: new ThreadmillServer({ queues: ['default'], concurrency: 2, prefetch: 0, shutdownTimeoutMs: 5_000 }),
      });
      await app.startAllMicroservices();
    }
    await app.listen(0, '127.0.0.1');
    cleanup.push(() => app.close());
    const url = `${await app.getUrl()}/health`;
    const check = async () => {
      const response = await fetch(url);
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    return { app, queue: app.get(TaskQueue), check };
  }

  it('is up with Redis answering, a live worker and a queue being consumed', async () => {
    const { check, queue } = await start({ worker: true });
    await queue.enqueue('MathService.add', [1, 2]);
    let health = await check();
    await waitUntil('the worker heartbeat is recorded', async () => (health = await check()).status === 200);
    expect(health.body.status).toBe('ok');
    expect(health.body.info.redis).toMatchObject({ status: 'up', latencyMs: expect.any(Number) });
    expect(health.body.info.workers).toEqual({ status: 'up', workers: { default: 1 } });
    expect(health.body.info.queues).toEqual({ status: 'up', oldestReadyAgeMs: { default: 0 } });
  });

  it('is down naming the queues without workers and the queues whose runs wait too long', async () => {
    const { check, queue } = await start({ worker: false });
    await queue.enqueue('MathService.add', [1, 2]);
    await new Promise((resolve) => setTimeout(resolve, MAX_AGE_MS + 100));
    const { status, body } = await check();
    expect(status).toBe(503);
    expect(body.info.redis.status).toBe('up');
    expect(body.error.workers).toMatchObject({
      status: 'down',
      workers: { default: 0 },
      message: expect.stringMatching(/default have fewer than 1 live worker/),
    });
    expect(body.error.queues.status).toBe('down');
    expect(body.error.queues.oldestReadyAgeMs.default).toBeGreaterThan(MAX_AGE_MS);
    expect(body.error.queues.message).toMatch(/default have ready runs older than 300 ms/);
  });

  it('keeps the queue-age check up for a paused queue, whose runs wait on purpose, and lists it as paused', async () => {
    const { app, queue } = await start({ worker: false });
    await app.get(TaskInspector).pause('default');
    await queue.enqueue('MathService.add', [1, 2]);
    await new Promise((resolve) => setTimeout(resolve, MAX_AGE_MS + 100));
    const result = await app.get(ThreadmillHealthIndicator).isQueueAgeUnder('queues', MAX_AGE_MS);
    expect(result.queues).toMatchObject({ status: 'up', paused: ['default'] });
    expect(result.queues['oldestReadyAgeMs'].default).toBeGreaterThan(MAX_AGE_MS);
  });

  it('is down for a queue name the backend does not have, naming it', async () => {
    const { app } = await start({ worker: false });
    const result = await app.get(ThreadmillHealthIndicator).isQueueAgeUnder('queues', 60_000, { queues: ['defualt'] });
    expect(result.queues.status).toBe('down');
    expect(result.queues['message']).toMatch(/^No queue defualt on this backend \(its queues: .*default.*\)/);
  });

  it('is down, within its timeout, when Redis stops answering', async () => {
    const redis = await RedisServer.start();
    cleanup.push(() => redis.stop());
    const { check } = await start({ worker: false, connection: redis.url });
    expect((await check()).body.info.redis.status).toBe('up');

    redis.pause();
    const startedAt = Date.now();
    const { status, body } = await check();
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(status).toBe(503);
    expect(body.error.redis.status).toBe('down');
    expect(body.error.workers).toMatchObject({ status: 'down', message: 'Redis did not answer within 500 ms' });
    redis.resume();
    await waitUntil('Redis is reachable again', async () => (await check()).body.info?.redis?.status === 'up', 5_000);
  });
});
