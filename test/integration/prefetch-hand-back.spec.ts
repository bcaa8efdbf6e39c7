import { Injectable, Module } from '@nestjs/common';
import { Task, TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const FAST = 4_000;
const SLOW = 200;
const SLOW_MS = 300;
const CONCURRENCY = 4;

/** When the first slow run started (epoch ms), or 0. */
let turnedSlowAt = 0;
const turnedSlow = (): boolean => turnedSlowAt > 0;

@Injectable()
class TurningTasks {
  /** Returns at once for the first FAST runs, then sleeps: the runs turn slow. */
  @Task({ name: 'turning.step' })
  async step(i: number): Promise<number> {
    if (i < FAST) return i;
    turnedSlowAt ||= Date.now();
    await delay(SLOW_MS);
    return i;
  }
}

@Module({ providers: [TurningTasks] })
class TurningModule {}

/**
 * The adaptive prefetch grows while runs finish fast and shrinks once they
 * turn slow: a process then hands back what it holds beyond twice its new
 * prefetch, so those runs wait in the queue, where any free process takes
 * them, uncharged and at their place.
 */
describe('a prefetch that shrinks', () => {
  let app: Harness;
  afterAll(() => app.close());

  it('hands runs it holds back to READY, uncharged, when runs turn slow', async () => {
    app = await Harness.start({
      options: { leaseTtlMs: 30_000 },
      worker: { concurrency: CONCURRENCY, prefetch: 'adaptive', shutdownTimeoutMs: 5_000 },
      imports: [TurningModule],
    });
    const counts = async () => (await app.queue.counts(['default']))[0]!;
    const runs = await app.queue.enqueueMany(
      Array.from({ length: FAST + SLOW }, (_, i) => ({ task: 'turning.step', args: [i] })),
    );

    // While runs finish fast, the process holds far more than its slots.
    let mostLeased = 0;
    while (!turnedSlow()) {
      mostLeased = Math.max(mostLeased, (await counts()).running);
      await delay(2);
    }
    expect(mostLeased).toBeGreaterThan(10 * CONCURRENCY);

    // Once they are slow, what it holds beyond its slots goes back: READY grows (only a hand-back adds to it now).
    let fewest = (await counts()).ready;
    let handedBack = 0;
    await waitUntil(
      'runs went back to READY',
      async () => {
        const { ready } = await counts();
        fewest = Math.min(fewest, ready);
        handedBack = Math.max(handedBack, ready - fewest);
        return handedBack > 10 * CONCURRENCY;
      },
      5_000,
    );
    expect(Date.now() - turnedSlowAt).toBeLessThan(5_000);
    // Back at their place, never charged: the next ready runs in enqueue order, no attempt.
    const ready = await app.module.get(TaskInspector).list('default', 'ready', { limit: 20 });
    expect(ready.map((run) => run.status)).toEqual(ready.map(() => TaskStatus.READY));
    expect(ready.map((run) => run.attempts)).toEqual(ready.map(() => 0));
    const order = ready.map((run) => runs.findIndex((enqueued) => enqueued.id === run.id));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(order[0]).toBeGreaterThanOrEqual(FAST);
  });
});
