import { Injectable, Module } from '@nestjs/common';
import { Task, TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/** When each run's code started, by the local clock, kept outside Threadmill. */
const starts = new Map<string, number>();

@Injectable()
class HeldService {
  @Task()
  async slow(key: string): Promise<void> {
    starts.set(key, Date.now());
    await sleep(2_500);
  }

  @Task()
  quick(key: string): void {
    starts.set(key, Date.now());
  }
}

@Module({ providers: [HeldService] })
class HeldModule {}

/** Short leases: a renewal round every 500 ms. */
const LEASE_TTL_MS = 1_500;

describe('pausing a queue whose runs a worker holds unstarted (prefetched)', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({
      options: { leaseTtlMs: LEASE_TTL_MS },
      imports: [HeldModule],
      worker: { concurrency: 1, prefetch: 4 },
    });
  });
  afterAll(() => app.close());

  it('hands them back within a renewal round: none starts until resume, then each runs once', async () => {
    const slow = await app.queue.enqueue(HeldService, 'slow', ['slow']);
    const quick = await app.queue.enqueueMany(
      ['q1', 'q2', 'q3', 'q4'].map((key) => ({ task: 'HeldService.quick', args: [key] })),
    );
    await waitUntil('the slow run started', () => starts.has('slow'));
    // The worker's one slot runs the slow run; it holds the quick ones, claimed before the pause.
    await waitUntil('the quick runs held', async () => (await app.queue.counts(['default']))[0]!.running === 5);
    const pausedAt = Date.now();
    await app.module.get(TaskInspector).pause('default');

    // Within a renewal round (a third of the lease) and a hand-back, only the slow run is still leased.
    await waitUntil('the held runs handed back', async () => (await app.queue.counts(['default']))[0]!.running === 1);
    expect(Date.now() - pausedAt).toBeLessThan(LEASE_TTL_MS);
    // The slow run finishes; its freed slot starts nothing while the queue is paused.
    await app.waitFor(slow.id, undefined, 10_000);
    await sleep(1_000);
    expect(['q1', 'q2', 'q3', 'q4'].filter((key) => starts.has(key))).toEqual([]);
    const [paused] = await app.queue.counts(['default']);
    expect(paused).toMatchObject({ ready: 4, running: 0 });

    await app.module.get(TaskInspector).resume('default');
    for (const run of quick) {
      // Handed back, they were never charged an attempt: each ran once, in its first attempt.
      expect(await app.waitFor(run.id, undefined, 10_000)).toMatchObject({
        status: TaskStatus.SUCCESSFUL,
        attempts: 1,
      });
    }
  });
});
