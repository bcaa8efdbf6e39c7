import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  TaskInspector,
  ThreadmillConfigError,
  ThreadmillModule,
  type ThreadmillModuleOptions,
} from '@threadmill/nestjs';
import { ThreadmillDashboardModule, type DashboardOverview } from '@threadmill/nestjs/dashboard';
import { ThreadmillMetricsModule } from '@threadmill/nestjs/metrics';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateOptions } from '../../libs/threadmill/src/options/validate-options.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { call } from '../support/dashboard.js';
import { scrape, valueOf } from '../support/prometheus.js';

const MAXMEMORY = 8 * 1024 * 1024;

/** An HTTP app with the dashboard and the metrics on `connection`. */
async function observe(options: ThreadmillModuleOptions): Promise<{ app: INestApplication; url: string }> {
  const module = await Test.createTestingModule({
    imports: [
      ThreadmillModule.forRoot({ queues: FIXTURE_QUEUES, alias: uniqueAlias('capacity'), ...options }),
      FixtureTasksModule,
      ThreadmillDashboardModule.forRoot(),
      ThreadmillMetricsModule.forRoot({ registry: new Registry() }),
    ],
  }).compile();
  const app = module.createNestApplication({ logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}

/**
 * Redis's memory where operators look: the inspector's capacity report, the
 * dashboard's overview and banner, and the Prometheus gauges.
 */
describe('Redis memory in the inspector, the dashboard and the metrics', () => {
  let server: RedisServer;
  let full: { app: INestApplication; url: string };
  let unlimited: { app: INestApplication; url: string };
  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', '8mb'] });
    // An empty Redis uses about a megabyte: over a 5% threshold of 8 MB from the start.
    full = await observe({ connection: server.url, memoryWarningRatio: 0.05 });
    unlimited = await observe({ connection: redisUrl() });
  });
  afterAll(async () => {
    await full?.app.close();
    await unlimited?.app.close();
    await server?.stop();
  });

  it('reports used memory and maxmemory, and the warning once the threshold is reached', async () => {
    const report = await full.app.get(TaskInspector).capacity();
    expect(report.maxBytes).toBe(MAXMEMORY);
    expect(report.usedBytes).toBeGreaterThan(0.05 * MAXMEMORY);
    expect(report.over.used).toBe(true);
    expect(report.warning).toMatch(/^Redis memory in use has reached \d+% of maxmemory \(memoryWarningRatio 0\.05\)/);

    const { body } = await call<DashboardOverview>(`${full.url}/threadmill/api/overview`);
    expect(body.capacity).toMatchObject({ maxBytes: MAXMEMORY, warningRatio: 0.05, over: { used: true } });
    expect(body.capacity!.warning).toMatch(/Lower resultTtlMs, raise maxmemory, or purge/);
    const page = await call<string>(`${full.url}/threadmill`);
    expect(page.body).toContain('id="capacity-warning"');
    expect(page.body).toContain('function renderCapacity()');

    const samples = await scrape(`${full.url}/metrics`);
    expect(valueOf(samples, 'threadmill_redis_maxmemory_bytes')).toBe(MAXMEMORY);
    const used = valueOf(samples, 'threadmill_redis_memory_bytes')!;
    expect(used).toBeGreaterThan(0);
    expect(valueOf(samples, 'threadmill_redis_memory_projected_bytes')).toBeGreaterThanOrEqual(used);
  });

  it('compares nothing on a Redis without maxmemory: no warning, maxmemory 0 in the metrics', async () => {
    const report = await unlimited.app.get(TaskInspector).capacity();
    expect(report).toMatchObject({ maxBytes: null, over: { used: false, projected: false }, warning: null });
    expect(report.usedBytes).toBeGreaterThan(0);
    const { body } = await call<DashboardOverview>(`${unlimited.url}/threadmill/api/overview`);
    expect(body.capacity).toMatchObject({ maxBytes: null, warning: null });
    const samples = await scrape(`${unlimited.url}/metrics`);
    expect(valueOf(samples, 'threadmill_redis_maxmemory_bytes')).toBe(0);
    expect(valueOf(samples, 'threadmill_redis_memory_bytes')).toBeGreaterThan(0);
  });

  it('refuses a threshold outside (0, 1] and a check interval under 100 ms, naming each', () => {
    const refused = (() => {
      try {
        validateOptions({ memoryWarningRatio: 1.5, memoryCheckIntervalMs: 10 });
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(ThreadmillConfigError);
    expect((refused as Error).message).toContain('memoryWarningRatio: got 1.5; memoryWarningRatio must not be greater');
    expect((refused as Error).message).toContain(
      'memoryCheckIntervalMs: got 10; memoryCheckIntervalMs must not be less',
    );
    expect(validateOptions({})).toMatchObject({ memoryWarningRatio: 0.8, memoryCheckIntervalMs: 5_000 });
  });
});
