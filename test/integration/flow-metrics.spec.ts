import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { FlowCycleError, TaskQueue, ThreadmillModule, type FlowSpec } from '@threadmill/nestjs';
import { ThreadmillMetricsModule } from '@threadmill/nestjs/metrics';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { RunEvents } from '../../libs/threadmill/src/events/run-events.js';
import { RunMetrics } from '../../libs/threadmill/src/metrics/run-metrics.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { parseMetrics, scrape, valueOf } from '../support/prometheus.js';

const add = (a: number, b: number, after?: FlowSpec['nodes'][string]['after']) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;

describe('flows in the run events and metrics', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('counts each flow event in threadmill_flows_enqueued_total, from 0 before the first', async () => {
    const registry = new Registry();
    const events = new RunEvents();
    const seen: unknown[] = [];
    events.subscribe(new RunMetrics(registry));
    events.subscribe({ flowEnqueued: (flow) => seen.push(flow) });
    const flows = async () => valueOf(parseMetrics(await registry.metrics()), 'threadmill_flows_enqueued_total');
    expect(await flows()).toBe(0);
    events.flowEnqueued({ id: 'f1', nodes: 4 });
    events.flowEnqueued({ id: 'f2', nodes: 1 });
    expect(await flows()).toBe(2);
    expect(seen).toEqual([
      { id: 'f1', nodes: 4 },
      { id: 'f2', nodes: 1 },
    ]);
  });

  it('counts the flows, chains and batches TaskQueue stores, and each of their nodes as a run enqueued', async () => {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias('metrics'), queues: FIXTURE_QUEUES }),
        FixtureTasksModule,
        ThreadmillMetricsModule.forRoot({ registry: new Registry() }),
      ],
    }).compile();
    const app = module.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    apps.push(app);
    const queue = app.get(TaskQueue);
    const url = `${await app.getUrl()}/metrics`;
    expect(valueOf(await scrape(url), 'threadmill_flows_enqueued_total')).toBe(0);

    await queue.enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) },
    });
    await queue.enqueueChain([add(1, 1), add(2, 2)]);
    await queue.enqueueBatch({ runs: [add(1, 1), add(2, 2), add(3, 3)], onComplete: add(0, 0) });
    // A flow refused before anything is stored counts nothing.
    await expect(queue.enqueueFlow({ nodes: { x: add(1, 1, ['y']), y: add(2, 2, ['x']) } })).rejects.toThrow(
      FlowCycleError,
    );

    const samples = await scrape(url);
    expect(valueOf(samples, 'threadmill_flows_enqueued_total')).toBe(3);
    expect(valueOf(samples, 'threadmill_runs_enqueued_total', { queue: 'default', task: 'MathService.add' })).toBe(10);
  });
});
