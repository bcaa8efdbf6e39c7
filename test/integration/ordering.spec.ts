import { TaskStatus } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { OrderService, recorded } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';

describe('ready order and deferral', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    recorded.length = 0;
  });

  /** A producer enqueues everything first, then a single-slot worker drains. */
  async function drainInOrder(enqueue: (producer: Harness) => Promise<string[]>, queues?: string[]): Promise<string[]> {
    const alias = uniqueAlias('order');
    const producer = await Harness.start({ options: { alias } });
    apps.push(producer);
    const ids = await enqueue(producer);
    const worker = await Harness.start({ options: { alias }, worker: { concurrency: 1, prefetch: 0, queues } });
    apps.push(worker);
    await Promise.all(ids.map((id) => worker.waitFor(id)));
    return [...recorded];
  }

  it('runs higher priority first and FIFO within a priority', async () => {
    const order = await drainInOrder(async (producer) => {
      const items = [
        { tag: 'a1', priority: 0 },
        { tag: 'low', priority: -5 },
        { tag: 'a2', priority: 0 },
        { tag: 'b1', priority: 10 },
        { tag: 'a3', priority: 0 },
        { tag: 'top', priority: 100 },
        { tag: 'b2', priority: 10 },
        { tag: 'bottom', priority: -100 },
        { tag: 'a4', priority: 0 },
      ];
      const ids: string[] = [];
      for (const { tag, priority } of items) {
        ids.push((await producer.queue.enqueue(OrderService, 'record', [tag], { priority })).id);
      }
      return ids;
    });
    expect(order).toEqual(['top', 'b1', 'b2', 'a1', 'a2', 'a3', 'a4', 'low', 'bottom']);
  });

  it('keeps FIFO order for runs enqueued in one enqueueMany', async () => {
    const order = await drainInOrder(async (producer) => {
      const results = await producer.queue.enqueueMany(
        Array.from({ length: 50 }, (_, i) => ({ task: 'OrderService.record', args: [`r${i}`] })),
      );
      return results.map((r) => r.id);
    });
    expect(order).toEqual(Array.from({ length: 50 }, (_, i) => `r${i}`));
  });

  it('serves a backlogged queue and a small one fairly, not one after the other', async () => {
    const order = await drainInOrder(
      async (producer) => {
        const results = await producer.queue.enqueueMany([
          ...Array.from({ length: 30 }, (_, i) => ({ task: 'OrderService.record', args: [`d${i}`] })),
          ...Array.from({ length: 5 }, (_, i) => ({ task: 'OrderService.recordEmail', args: [`e${i}`] })),
        ]);
        return results.map((r) => r.id);
      },
      ['default', 'emails'],
    );
    const lastEmail = Math.max(...['e0', 'e1', 'e2', 'e3', 'e4'].map((tag) => order.indexOf(tag)));
    expect(lastEmail).toBeLessThan(12);
    expect(order.filter((tag) => tag.startsWith('d'))).toEqual(Array.from({ length: 30 }, (_, i) => `d${i}`));
  });

  it('does not start a run before its runAfter or delayMs', async () => {
    // A broker interval far longer than the margins below: a promotion that
    // waited for the interval would fail them however loaded the machine.
    const app = await Harness.start({ worker: { concurrency: 2 }, options: { brokerIntervalMs: 10_000 } });
    apps.push(app);
    // Due a second after the delayed run, so that the two are promoted in their order on a loaded machine too.
    const runAfter = new Date(Date.now() + 1_400);
    const at = await app.queue.enqueue(OrderService, 'record', ['at'], { runAfter });
    const delayed = await app.queue.enqueue(OrderService, 'record', ['delayed'], { delayMs: 400 });
    const now = await app.queue.enqueue(OrderService, 'record', ['now']);
    expect(at.runAfter).toEqual(runAfter);
    expect(delayed.runAfter!.getTime()).toBe(delayed.enqueuedAt.getTime() + 400);
    expect(now.runAfter).toBeNull();
    expect((await app.queue.counts(['default']))[0]!.deferred).toBeGreaterThanOrEqual(1);

    const [atDone, delayedDone] = await Promise.all([app.waitFor(at.id), app.waitFor(delayed.id), app.waitFor(now.id)]);
    expect(atDone!.status).toBe(TaskStatus.SUCCESSFUL);
    expect(atDone!.startedAt!.getTime()).toBeGreaterThanOrEqual(runAfter.getTime());
    expect(delayedDone!.startedAt!.getTime()).toBeGreaterThanOrEqual(delayed.runAfter!.getTime());
    // The broker sleeps until the next due run, not a whole interval: promotion is prompt.
    expect(atDone!.startedAt!.getTime() - runAfter.getTime()).toBeLessThan(5_000);
    expect(recorded).toEqual(['now', 'delayed', 'at']);
  });
});
