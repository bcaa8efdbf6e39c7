import { Controller, Get, Module, type INestApplication, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ThreadmillConfigError, ThreadmillModule, TaskInspector, TaskQueue, TaskStatus } from '@threadmill/nestjs';
import { ThreadmillMetricsModule, type ThreadmillMetricsOptions } from '@threadmill/nestjs/metrics';
import { Registry, register } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { RunEvents } from '../../libs/threadmill/src/events/run-events.js';
import { RunMetrics } from '../../libs/threadmill/src/metrics/run-metrics.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Acknowledger } from '../../libs/threadmill/src/worker/acknowledger.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { Harness } from '../support/harness.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { parseMetrics, scrape, valueOf, type Sample } from '../support/prometheus.js';
import { waitUntil } from '../support/wait.js';

@Controller('own-metrics')
class OwnMetricsController {
  @Get()
  metrics(): Promise<string> {
    return register.metrics();
  }
}

/** The application's own registry, provided by one of its modules, for `forRootAsync`. */
const APP_REGISTRY = Symbol('APP_REGISTRY');
@Module({ providers: [{ provide: APP_REGISTRY, useFactory: () => new Registry() }], exports: [APP_REGISTRY] })
class AppRegistryModule {}

/** Options with three bad fields. */
const badOptions = () =>
  ThreadmillMetricsModule.forRoot({
    path: '../../etc',
    registry: {} as Registry,
    queueMetrics: 'yes' as unknown as boolean,
  });

describe('Prometheus metrics (ThreadmillMetricsModule)', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  /** An HTTP app with Threadmill, the metrics module and (optionally) an in-process worker of `default`. */
  async function start(
    metrics: ThreadmillMetricsOptions,
    {
      worker = true,
      leaseTtlMs,
      controllers = [],
    }: { worker?: boolean; leaseTtlMs?: number; controllers?: Type[] } = {},
  ) {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({
          connection: redisUrl(),
          alias: uniqueAlias('metrics'),
          queues: FIXTURE_QUEUES,
          leaseTtlMs,
        }),
        FixtureTasksModule,
        ThreadmillMetricsModule.forRoot(metrics),
      ],
      controllers,
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    if (worker) {
      app.connectMicroservice({ strategy: new ThreadmillServer({ queues: ['default'], concurrency: 4 }) });
      await app.startAllMicroservices();
    }
    await app.listen(0, '127.0.0.1');
    apps.push(app);
    return { app, queue: app.get(TaskQueue), url: await app.getUrl() };
  }

  it('counts runs by outcome, task and queue, times attempts, and reports queue gauges from Redis', async () => {
    const { app, queue, url } = await start({ registry: new Registry() });
    const runs = await queue.enqueueMany([
      ...Array.from({ length: 20 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      ...Array.from({ length: 3 }, () => ({ task: 'FailService.flaky', args: [1] })),
      ...Array.from({ length: 2 }, () => ({ task: 'FailService.alwaysFail', args: ['no'] })),
    ]);
    // A queue nobody consumes: its oldest ready run ages.
    await queue.enqueue('MathService.add', [1, 2], { queue: 'emails' });
    await app.get(TaskInspector).pause('emails');
    await waitUntil('every run finished', async () => {
      const results = await queue.getResults(runs.map((r) => r.id));
      return results.every((r) => r?.status === TaskStatus.SUCCESSFUL || r?.status === TaskStatus.FAILED);
    });

    let samples: Sample[] = [];
    await waitUntil('the last acknowledgements are counted', async () => {
      samples = await scrape(`${url}/metrics`);
      return (
        valueOf(samples, 'threadmill_runs_failed_total') === 2 &&
        valueOf(samples, 'threadmill_runs_succeeded_total') === 23
      );
    });
    const add = { queue: 'default', task: 'MathService.add' };
    const flaky = { queue: 'default', task: 'FailService.flaky' };
    expect(valueOf(samples, 'threadmill_runs_enqueued_total', add)).toBe(20);
    expect(valueOf(samples, 'threadmill_runs_enqueued_total', flaky)).toBe(3);
    expect(valueOf(samples, 'threadmill_runs_enqueued_total', { queue: 'emails' })).toBe(1);
    expect(valueOf(samples, 'threadmill_runs_succeeded_total', add)).toBe(20);
    expect(valueOf(samples, 'threadmill_runs_succeeded_total', flaky)).toBe(3);
    expect(valueOf(samples, 'threadmill_runs_retried_total', flaky)).toBe(3);
    expect(valueOf(samples, 'threadmill_runs_failed_total', { task: 'FailService.alwaysFail' })).toBe(2);
    expect(valueOf(samples, 'threadmill_runs_quarantined_total')).toBe(0);
    // Every attempt is timed: 20 + 3 × 2 + 2, by outcome.
    expect(valueOf(samples, 'threadmill_run_duration_seconds_count', { ...add, outcome: 'successful' })).toBe(20);
    expect(valueOf(samples, 'threadmill_run_duration_seconds_count', { ...flaky, outcome: 'retry' })).toBe(3);
    expect(valueOf(samples, 'threadmill_run_duration_seconds_count')).toBe(28);
    expect(
      valueOf(samples, 'threadmill_run_duration_seconds_bucket', { ...add, outcome: 'successful', le: '+Inf' }),
    ).toBe(20);

    expect(valueOf(samples, 'threadmill_queue_runs', { queue: 'default', segment: 'successful' })).toBe(23);
    expect(valueOf(samples, 'threadmill_queue_runs', { queue: 'default', segment: 'failed' })).toBe(2);
    expect(valueOf(samples, 'threadmill_queue_runs', { queue: 'emails', segment: 'ready' })).toBe(1);
    expect(valueOf(samples, 'threadmill_queue_oldest_ready_age_seconds', { queue: 'default' })).toBe(0);
    expect(valueOf(samples, 'threadmill_queue_oldest_ready_age_seconds', { queue: 'emails' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'threadmill_queue_paused', { queue: 'default' })).toBe(0);
    expect(valueOf(samples, 'threadmill_queue_paused', { queue: 'emails' })).toBe(1);
    expect(valueOf(samples, 'threadmill_workers', { queue: 'default' })).toBe(1);
    expect(valueOf(samples, 'threadmill_workers', { queue: 'emails' })).toBe(0);
    expect(valueOf(samples, 'threadmill_redis_up')).toBe(1);
  });

  it('counts lease renewals of a task that outlives its lease', async () => {
    const { queue, url } = await start({ registry: new Registry(), queueMetrics: false }, { leaseTtlMs: 300 });
    const run = await queue.enqueue('SlowService.sleep', [800]);
    await waitUntil('the run finished', async () => (await queue.getResult(run.id)).status === TaskStatus.SUCCESSFUL);
    const samples = await scrape(`${url}/metrics`);
    // Renewed every 100 ms for 800 ms.
    expect(valueOf(samples, 'threadmill_lease_renewals_total')).toBeGreaterThanOrEqual(4);
    expect(valueOf(samples, 'threadmill_leases_lost_total')).toBe(0);
    expect(valueOf(samples, 'threadmill_stale_acks_total')).toBe(0);
    expect(valueOf(samples, 'threadmill_queue_runs')).toBeUndefined();
  });

  it('counts lease expiries the reaper settles and stale acknowledgements', async () => {
    const harness = await Harness.start({ options: { leaseTtlMs: 150 } });
    const registry = new Registry();
    const events = new RunEvents();
    events.subscribe(new RunMetrics(registry));
    const executor = new TaskExecutor(harness.module.get(TaskRegistry));
    const broker = new Broker(
      harness.backend,
      executor,
      { queues: ['default'], intervalMs: 1_000, claimTtlMs: 5_000, maxRecoveries: 3 },
      events,
    );
    const acknowledger = new Acknowledger(harness.backend, 10, events);
    try {
      const { id } = await harness.queue.enqueue('MathService.add', [1, 1]);
      const [leased] = await harness.backend.claim(['default'], 1, 'host:1:0', 0);
      await harness.backend.acknowledge([], [leased!]);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await broker.pass(); // the started attempt's lease expired: no retry policy, so FAILED
      const applied = await new Promise<boolean>((settled) =>
        acknowledger.push({
          id,
          queue: 'default',
          token: leased!.token,
          outcome: { kind: 'successful', returnValue: '2' },
          settled,
        }),
      );
      expect(applied).toBe(false);

      const samples = parseMetrics(await registry.metrics());
      const add = { queue: 'default', task: 'MathService.add' };
      expect(valueOf(samples, 'threadmill_lease_expiries_total', add)).toBe(1);
      expect(valueOf(samples, 'threadmill_runs_failed_total', add)).toBe(1);
      expect(valueOf(samples, 'threadmill_runs_succeeded_total', add)).toBe(0);
      expect(valueOf(samples, 'threadmill_stale_acks_total')).toBe(1);
      // The reaper's outcome has no attempt to time.
      expect(valueOf(samples, 'threadmill_run_duration_seconds_count')).toBeUndefined();
    } finally {
      await harness.close();
    }
  });

  it('serves at a chosen path, or nowhere, and registers in the global registry by default', async () => {
    const custom = await start({ path: 'internal/prometheus', registry: new Registry() }, { worker: false });
    await custom.queue.enqueue('MathService.add', [1, 2]);
    expect(valueOf(await scrape(`${custom.url}/internal/prometheus`), 'threadmill_runs_enqueued_total')).toBe(1);
    expect((await fetch(`${custom.url}/metrics`)).status).toBe(404);

    // path: false, global registry: the application's own endpoint shows them.
    const own = await start(
      { path: false, defaultMetrics: true },
      { worker: false, controllers: [OwnMetricsController] },
    );
    await own.queue.enqueue('MathService.add', [1, 2]);
    expect((await fetch(`${own.url}/metrics`)).status).toBe(404);
    const samples = await scrape(`${own.url}/own-metrics`);
    expect(valueOf(samples, 'threadmill_runs_enqueued_total')).toBe(1);
    // A producer settles no run: it reports no outcome series (not misleading zeros).
    expect(valueOf(samples, 'threadmill_runs_succeeded_total')).toBeUndefined();
    expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);

    // Closing the app removes its metrics, so another instance can register them again.
    await apps.pop()!.close();
    expect(parseMetrics(await register.metrics()).filter((s) => s.name.startsWith('threadmill_'))).toEqual([]);
    const again = await start({ path: false }, { worker: false, controllers: [OwnMetricsController] });
    expect((await fetch(`${again.url}/own-metrics`)).status).toBe(200);
  });

  it('takes the registry and switches from an injected factory with forRootAsync, at a static path', async () => {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias('metrics'), queues: FIXTURE_QUEUES }),
        FixtureTasksModule,
        ThreadmillMetricsModule.forRootAsync({
          path: 'ops/metrics',
          imports: [AppRegistryModule],
          inject: [APP_REGISTRY],
          useFactory: (registry: Registry) => ({ registry, queueMetrics: false }),
        }),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    apps.push(app);
    await app.get(TaskQueue).enqueue('MathService.add', [1, 2]);

    const response = await fetch(`${await app.getUrl()}/ops/metrics`);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parseMetrics(await response.text());
    expect(valueOf(samples, 'threadmill_runs_enqueued_total', { queue: 'default', task: 'MathService.add' })).toBe(1);
    expect(samples.some((s) => s.name === 'threadmill_queue_runs')).toBe(false);
    // Recorded in the application's registry, not the global one.
    expect(
      valueOf(parseMetrics(await app.get<Registry>(APP_REGISTRY).metrics()), 'threadmill_runs_enqueued_total'),
    ).toBe(1);
    expect(parseMetrics(await register.metrics()).filter((s) => s.name.startsWith('threadmill_'))).toEqual([]);
  });

  it("refuses a factory's bad options when the app boots, naming the field", async () => {
    const boot = Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias('metrics'), queues: FIXTURE_QUEUES }),
        ThreadmillMetricsModule.forRootAsync({ useFactory: () => ({ defaultMetrics: 1 as unknown as boolean }) }),
      ],
    }).compile();
    await expect(boot).rejects.toThrow(
      /defaultMetrics: got 1; defaultMetrics must be a boolean value \(rule: isBoolean\)\nFix these fields in ThreadmillMetricsModule\.forRootAsync\(\)/,
    );
  });

  it('refuses bad options, naming the field and the rule', () => {
    expect(badOptions).toThrow(ThreadmillConfigError);
    expect(badOptions).toThrow(/path: got '..\/..\/etc'; path must be a route/);
    expect(badOptions).toThrow(/registry: got \{\}; registry must be a prom-client Registry/);
    expect(badOptions).toThrow(/queueMetrics: got 'yes'/);
    expect(badOptions).toThrow(/Fix these fields in ThreadmillMetricsModule.forRoot\(\)/);
  });
});
