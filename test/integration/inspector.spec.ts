import {
  InvalidInspectionError,
  InvalidRunStateError,
  TaskInspector,
  TaskStatus,
  type Segment,
} from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { FailService, MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

describe('the telemetry API (TaskInspector)', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(...args: Parameters<typeof Harness.start>): Promise<Harness> {
    const app = await Harness.start(...args);
    apps.push(app);
    return app;
  }

  it('gives each queue its counts, rates, oldest ready age and totals', async () => {
    const alias = uniqueAlias('inspect');
    const producer = await start({ options: { alias } });
    const inspector = producer.module.get(TaskInspector);
    await producer.queue.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    await producer.queue.enqueue(MathService, 'add', [1, 1], { delayMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 120));

    let [overview] = (await inspector.overview()).filter((q) => q.queue === 'default');
    expect(overview).toMatchObject({ ready: 30, deferred: 1, running: 0, successful: 0 });
    expect(overview!.oldestReadyAgeMs).toBeGreaterThanOrEqual(100);
    expect(overview!.ingressPerSecond).toBeGreaterThan(0);
    expect(overview!.egressPerSecond).toBe(0);
    expect(overview!.totals).toMatchObject({ enqueued: 31 });
    expect((await inspector.queues()).sort()).toEqual(['default', 'emails', 'reports']);

    const worker = await start({ options: { alias }, worker: { concurrency: 4 } });
    await waitUntil('the queue is drained', async () => (await worker.queue.counts(['default']))[0]!.successful === 30);
    [overview] = (await inspector.overview()).filter((q) => q.queue === 'default');
    expect(overview).toMatchObject({ ready: 0, successful: 30, oldestReadyAgeMs: null });
    expect(overview!.egressPerSecond).toBeGreaterThan(0);
    expect(overview!.totals).toMatchObject({ enqueued: 31, succeeded: 30 });

    const minutes = await inspector.metrics('default', 10);
    expect(minutes).toHaveLength(10);
    const sum = (key: 'enqueued' | 'started' | 'succeeded') => minutes.reduce((total, m) => total + m[key], 0);
    expect([sum('enqueued'), sum('started'), sum('succeeded')]).toEqual([31, 30, 30]);
    expect(minutes.at(-1)!.at).toBeLessThanOrEqual(Date.now());
    // Every bucket expires, within two hours: its first field set the expiry.
    const client = producer.backend.connections.client;
    const buckets = await client.keys(`${producer.backend.keys.metrics('default')}*`);
    expect(buckets.length).toBeGreaterThan(0);
    for (const bucket of buckets) {
      const ttl = await client.pttl(bucket);
      expect(ttl).toBeGreaterThan(7_000_000);
      expect(ttl).toBeLessThanOrEqual(7_200_000);
    }
  });

  it('finds the oldest ready run behind runs of higher priority', async () => {
    const alias = uniqueAlias('bands');
    const producer = await start({ options: { alias } });
    const inspector = producer.module.get(TaskInspector);
    // The oldest waits in the lowest band; every band above it is newer.
    await producer.queue.enqueue(MathService, 'add', [1, 1], { priority: -100 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const priority of [100, 7, 0, -1]) await producer.queue.enqueue(MathService, 'add', [1, 1], { priority });

    const [overview] = (await inspector.overview()).filter((q) => q.queue === 'default');
    expect(overview).toMatchObject({ ready: 5 });
    expect(overview!.oldestReadyAgeMs).toBeGreaterThanOrEqual(300);
  });

  it('lists live workers with the leases they hold', async () => {
    const app = await start({ worker: { concurrency: 2 } });
    const inspector = app.module.get(TaskInspector);
    const runs = await app.queue.enqueueMany([
      { task: 'SlowService.sleep', args: [1_500] },
      { task: 'SlowService.sleep', args: [1_500] },
    ]);
    await Promise.all(runs.map((r) => app.waitFor(r.id, (x) => x.status === TaskStatus.RUNNING)));
    await waitUntil('the worker is recorded', async () => (await inspector.workers()).length === 1);
    const [worker] = await inspector.workers();
    expect(worker!.id).toBe(app.worker.workerId);
    expect(worker!.leases.map((lease) => lease.id).sort()).toEqual(runs.map((r) => r.id).sort());
    for (const lease of worker!.leases) {
      expect(lease).toMatchObject({ queue: 'default', taskName: 'SlowService.sleep' });
      expect(lease.deadline.getTime()).toBeGreaterThan(Date.now());
    }
  });

  it('dequeues a pending run, refuses a leased one, and purges a queue with its records', async () => {
    const app = await start();
    const inspector = app.module.get(TaskInspector);
    const pending = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const deferred = await app.queue.enqueue(MathService, 'add', [2, 2], { delayMs: 60_000 });
    await inspector.dequeue(pending.id);
    await inspector.dequeue(deferred.id);
    expect(await app.queue.getResults([pending.id, deferred.id])).toEqual([null, null]);

    const leased = await app.queue.enqueue(SlowService, 'sleep', [10]);
    await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await expect(inspector.dequeue(leased.id)).rejects.toThrow(
      /Cannot dequeue run .*: it is RUNNING; only READY \(or deferred\) or WAITING \(a flow node\) runs can be dequeued/,
    );
    await expect(inspector.dequeue(leased.id)).rejects.toBeInstanceOf(InvalidRunStateError);
    await expect(inspector.requeue(leased.id)).rejects.toThrow(
      /Cannot requeue run .*: it is RUNNING; only FAILED, QUARANTINED or CANCELLED runs can be requeued. Nothing was changed./,
    );
    await expect(inspector.list('no queue', 'ready')).rejects.toBeInstanceOf(InvalidInspectionError);
    // Pages it cannot serve are refused, not read whole (ZRANGE 0 -1) or from the end.
    await expect(inspector.list('default', 'ready', { limit: 0 })).rejects.toThrow(
      /limit must be an integer from 1 to 1000, got 0/,
    );
    await expect(inspector.list('default', 'ready', { limit: 1001 })).rejects.toThrow(InvalidInspectionError);
    await expect(inspector.list('default', 'ready', { offset: -1 })).rejects.toThrow(
      /offset must be an integer of 0 or more, got -1/,
    );
    // A one-minute window reports finite rates whatever the second of the minute.
    for (const queue of await inspector.overview(1)) {
      expect(Number.isFinite(queue.ingressPerSecond) && Number.isFinite(queue.egressPerSecond)).toBe(true);
    }
    await expect(inspector.list('default', 'done' as Segment)).rejects.toThrow(
      /segment must be one of waiting, ready, deferred/,
    );

    const failed = await app.queue.enqueue(FailService, 'alwaysFail', ['x']);
    const [lease] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await app.backend.acknowledge([
      {
        id: failed.id,
        queue: 'default',
        token: lease!.token,
        outcome: { kind: 'failed', error: { errorClass: 'E', message: 'm', stack: 's', attempt: 1 } },
      },
    ]);
    await app.queue.enqueueMany(Array.from({ length: 5 }, () => ({ task: 'MathService.add', args: [1, 1] })));
    expect(await inspector.purge('default')).toBe(7); // 5 ready, 1 running, 1 failed
    expect((await inspector.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, failed: 0 });
    const left = await app.backend.connections.client.keys(`threadmill:{${app.alias}}:run:*`);
    expect(left).toEqual([]);
  });
});
