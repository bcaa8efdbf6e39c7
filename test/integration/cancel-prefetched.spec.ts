import { Injectable, Module } from '@nestjs/common';
import { Task, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/** Which runs' code started, kept outside Threadmill. */
const started = new Set<string>();

@Injectable()
class PrefetchedService {
  @Task()
  async slow(key: string): Promise<void> {
    started.add(key);
    await sleep(2_500);
  }

  @Task()
  quick(key: string): void {
    started.add(key);
  }
}

@Module({ providers: [PrefetchedService] })
class PrefetchedModule {}

/** Short leases: a renewal round every 500 ms. */
const LEASE_TTL_MS = 1_500;

describe('cancelling runs a worker holds unstarted (prefetched)', () => {
  let app: Harness;
  const logger = new CapturedLogger();
  beforeAll(async () => {
    app = await Harness.start({
      options: { leaseTtlMs: LEASE_TTL_MS },
      imports: [PrefetchedModule],
      worker: { concurrency: 1, prefetch: 4 },
    });
    app.module.useLogger(logger);
  });
  afterAll(() => app.close());

  it('drops them within a renewal round: they never start, the others run once', async () => {
    const slow = await app.queue.enqueue(PrefetchedService, 'slow', ['slow']);
    const quick = await app.queue.enqueueMany(
      ['q1', 'q2', 'q3', 'q4'].map((key) => ({ task: 'PrefetchedService.quick', args: [key] })),
    );
    await waitUntil('the slow run started', () => started.has('slow'));
    // The worker's one slot runs the slow run; it holds the quick ones.
    await waitUntil('the quick runs held', async () => (await app.queue.counts(['default']))[0]!.running === 5);
    const [q1, q2, q3, q4] = quick;
    const cancelledAt = Date.now();
    for (const run of [q2!, q3!]) {
      expect(await app.queue.cancel(run.id)).toMatchObject({ cancelled: true, previousStatus: TaskStatus.RUNNING });
    }
    // Within a renewal round (a third of the lease), while the slow run still holds the slot.
    const dropped = /Dropped \d prefetched run\(s\) that were cancelled/;
    await waitUntil('the worker dropped them', () => logger.lines.some((line) => dropped.test(line.message)));
    expect(Date.now() - cancelledAt).toBeLessThan(LEASE_TTL_MS);
    expect(started.has('q1')).toBe(false);
    for (const run of [q1!, q4!]) {
      expect(await app.waitFor(run.id, undefined, 10_000)).toMatchObject({
        status: TaskStatus.SUCCESSFUL,
        attempts: 1,
      });
    }
    expect(await app.waitFor(slow.id, undefined, 10_000)).toMatchObject({ status: TaskStatus.SUCCESSFUL });
    expect([...started].sort()).toEqual(['q1', 'q4', 'slow']);
    for (const run of [q2!, q3!]) {
      expect(await app.queue.getResult(run.id)).toMatchObject({ status: TaskStatus.CANCELLED, attempts: 0 });
    }
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ running: 0, cancelled: 2, successful: 3 });
  });
});
