import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  createInspector,
  getTaskQueueToken,
  Task,
  type TaskQueue,
  ThreadmillConfigError,
  ThreadmillModule,
} from '@threadmill/nestjs';
import { ThreadmillDashboardModule } from '@threadmill/nestjs/dashboard';
import { ThreadmillHealthIndicator, ThreadmillHealthModule } from '@threadmill/nestjs/health';
import { ThreadmillMetricsModule } from '@threadmill/nestjs/metrics';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';

@Injectable()
class Payments {
  @Task({ name: 'tools.charge', backend: 'critical', queue: 'payments' })
  charge(cents: number) {
    return cents;
  }
}

@Module({ providers: [Payments] })
class PaymentsModule {}

describe('the dashboard, metrics and health indicator of a named backend', () => {
  let second: RedisServer;
  let app: INestApplication | undefined;
  const registry = new Registry();

  beforeAll(async () => {
    second = await RedisServer.start();
  });

  afterAll(async () => {
    await second.stop();
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
    registry.clear();
  });

  const backends = () => [
    ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), queues: ['default'] }),
    ThreadmillModule.forRoot({ name: 'critical', connection: second.url, queues: ['payments'] }),
  ];

  it('show and check the backend their backend option names', async () => {
    const module = await Test.createTestingModule({
      imports: [
        ...backends(),
        PaymentsModule,
        ThreadmillDashboardModule.forRoot({ backend: 'critical' }),
        ThreadmillMetricsModule.forRoot({ backend: 'critical', registry, path: false }),
        ThreadmillHealthModule,
      ],
    }).compile();
    app = module.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const critical = app.get<TaskQueue>(getTaskQueueToken('critical'));
    await critical.enqueue(Payments, 'charge', [5]);
    await critical.enqueue(Payments, 'charge', [6]);

    const overview = (await (await fetch(`${await app.getUrl()}/threadmill/api/overview`)).json()) as {
      queues: { queue: string; ready: number }[];
    };
    expect(overview.queues).toEqual([expect.objectContaining({ queue: 'payments', ready: 2 })]);

    const scraped = await registry.metrics();
    expect(scraped).toMatch(/threadmill_runs_enqueued_total\{[^}]*queue="payments"[^}]*\} 2/);
    expect(scraped).toMatch(/threadmill_queue_runs\{[^}]*queue="payments"[^}]*segment="ready"[^}]*\} 2/);
    expect(scraped).not.toMatch(/queue="default"/);

    const health = app.get(ThreadmillHealthIndicator);
    expect(await health.areWorkersAlive('critical-workers', { backend: 'critical' })).toEqual({
      'critical-workers': expect.objectContaining({ status: 'down', workers: { payments: 0 } }),
    });
    expect(await health.areWorkersAlive('default-workers')).toEqual({
      'default-workers': expect.objectContaining({ status: 'down', workers: { default: 0 } }),
    });
    expect(() => health.isRedisReachable('archive', { backend: 'archive' })).toThrow(ThreadmillConfigError);

    // The terminal inspector (threadmill inspect --redis <url> --alias critical) reads the same keyspace.
    const standalone = await createInspector({ connection: second.url, alias: 'critical' });
    try {
      expect(await standalone.inspector.queues()).toEqual(['payments']);
      expect(await standalone.inspector.counts()).toEqual([expect.objectContaining({ queue: 'payments', ready: 2 })]);
    } finally {
      await standalone.close();
    }
  });

  it('fails the boot of a dashboard of a backend no module declares, naming it', async () => {
    const module = await Test.createTestingModule({
      imports: [...backends(), ThreadmillDashboardModule.forRoot({ backend: 'archive' })],
    }).compile();
    app = module.createNestApplication({ logger: false });
    const error = await app.init().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadmillConfigError);
    expect((error as Error).message).toContain('no ThreadmillModule of the application declares backend "archive"');
  });
});
