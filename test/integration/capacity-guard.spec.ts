import { Injectable, Module } from '@nestjs/common';
import {
  RedisOutOfMemoryError,
  Task,
  TaskContext,
  TaskInspector,
  TaskStatus,
  type QueueCounts,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapturedLogger } from '../support/captured-logger.js';
import { Harness } from '../support/harness.js';

/** Payloads of about 2 KB, returned as the result: a kept run holds about 4 KB, and 20 MB fill within seconds. */
const FILLER = 'x'.repeat(2_000);
const BATCH = 100;
const MAXMEMORY = 20 * 1024 * 1024;

/** Runs whose task ran to its end, by id: the witness outside Threadmill. */
const finished = new Set<string>();

@Injectable()
class KeptResultService {
  /** Returns its payload, so its kept result is as large as its arguments. */
  @Task({ queue: 'emails' })
  archive(body: string, context: TaskContext): string {
    finished.add(context.id);
    return body;
  }

  @Task({ queue: 'reports' })
  render(body: string, context: TaskContext): string {
    finished.add(context.id);
    return body;
  }

  /** Deferred for an hour in the test: runs stored before Redis fills, which must outlive it. */
  @Task()
  remind(note: string): string {
    return note;
  }
}

@Module({ providers: [KeptResultService] })
class KeptResultModule {}

const pending = (count: QueueCounts) => count.ready + count.deferred + count.running;
const stored = (counts: readonly QueueCounts[]) =>
  counts.reduce((sum, c) => sum + pending(c) + c.successful + c.failed + c.quarantined, 0);

/** A batch of runs of `method` with the ids `<tag>-<i>`. */
const batchOf = (method: 'archive' | 'render', tag: string) =>
  Array.from({ length: BATCH }, (_, i) => ({
    task: KeptResultService,
    method,
    args: [FILLER] as [string],
    id: `${tag}-${i}`,
  }));

/**
 * The capacity guard and a Redis that fills: a worker keeps results in a
 * 20 MB Redis (`noeviction`) until it refuses enqueues. The guard warns
 * before the first refusal, naming the figures and what to change; a refused
 * enqueue stores nothing; after a purge enqueues succeed again, and every run
 * an enqueue confirmed either finished or is still stored.
 */
describe('the capacity guard, and a Redis that fills with kept results', () => {
  let server: RedisServer;
  let app: Harness;
  const logger = new CapturedLogger();
  beforeAll(async () => {
    server = await RedisServer.start({ args: ['--maxmemory', '20mb'] });
    app = await Harness.start({
      // The guard checks after broker passes: every 100 ms while runs are leased.
      options: { connection: server.url, resultTtlMs: 3_600_000, brokerIntervalMs: 100, memoryCheckIntervalMs: 100 },
      worker: { concurrency: 8 },
      imports: [KeptResultModule],
    });
    app.module.useLogger(logger);
  });
  afterAll(async () => {
    await app.close();
    await server.stop();
  });

  /** Waits until `queue` holds no pending run. */
  async function settled(queue: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (pending((await app.queue.counts([queue]))[0]!) > 0) {
      if (Date.now() > deadline) throw new Error(`queue ${queue} still has pending runs after 15 s`);
      await delay(20);
    }
  }

  it('warns before the first refused enqueue, stores nothing of it, and recovers after a purge with no run lost', async () => {
    const inspector = app.module.get(TaskInspector);
    const confirmed: string[] = [];
    const reminders = await app.queue.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({
        task: KeptResultService,
        method: 'remind' as const,
        args: [`note ${i}`] as [string],
        delayMs: 3_600_000,
      })),
    );

    // Half of Redis goes to the finished runs of one queue, each batch run to its end.
    const archived: string[] = [];
    for (let batch = 0; (await app.backend.memory()).usedBytes! < MAXMEMORY / 2; batch++) {
      const items = batchOf('archive', `archive-${batch}`);
      await app.queue.enqueueMany(items);
      archived.push(...items.map((item) => item.id));
      await settled('emails');
    }
    confirmed.push(...archived);

    // Then another queue's runs, enqueued until Redis refuses one call.
    let refusal: unknown;
    let refusedAt = -1;
    let refused: string[] = [];
    let before: { stored: number; enqueued: number } | undefined;
    let after: typeof before;
    const tally = async () => ({
      stored: stored(await inspector.counts()),
      enqueued: (await app.backend.stats('reports'))['enqueued'] ?? 0,
    });
    for (let batch = 0; batch < 1_000 && refusal === undefined; batch++) {
      const items = batchOf('render', `render-${batch}`);
      const tallied = await tally();
      try {
        await app.queue.enqueueMany(items);
        confirmed.push(...items.map((item) => item.id));
      } catch (error) {
        refusedAt = logger.lines.length;
        refusal = error;
        refused = items.map((item) => item.id);
        before = tallied;
        after = await tally();
      }
    }

    expect(refusal).toBeInstanceOf(RedisOutOfMemoryError);
    expect((refusal as Error).message).toMatch(/out of memory/);
    // The guard warned first, naming the figures and the settings to change.
    const warning = logger.lines
      .slice(0, refusedAt)
      .find((line) => line.level === 'warn' && /of maxmemory \(memoryWarningRatio 0\.8\)/.test(line.message));
    expect(warning?.message).toMatch(/used [\d.]+ [KM]B of maxmemory 20\.0 MB, projected [\d.]+ [KMG]B/);
    expect(warning?.message).toMatch(/resultTtlMs 3600000 ms/);
    expect(warning?.message).toMatch(/Lower resultTtlMs, raise maxmemory, or purge/);
    // The refused call stored none of its runs, and no counter moved.
    expect(await app.backend.loadMany(refused)).toEqual(refused.map(() => null));
    expect(after).toEqual(before);
    // The inspector sees the same: Redis's memory in use over the threshold.
    expect((await inspector.capacity()).warning).toMatch(/^Redis memory in use has reached (9\d|1\d\d)% of maxmemory/);

    // An operator purges the archive: the worker finishes what waits, and enqueues succeed again.
    expect(await inspector.purge('emails')).toBe(archived.length);
    const again = batchOf('render', 'after-purge');
    await app.queue.enqueueMany(again);
    confirmed.push(...again.map((item) => item.id));
    await settled('reports');

    // Every confirmed run finished (the purged ones before the purge); those not purged are still stored.
    expect(confirmed.filter((id) => !finished.has(id))).toEqual([]);
    const kept = confirmed.filter((id) => !archived.includes(id));
    const results = await app.queue.getResults(kept);
    expect(results.filter((run) => run?.status !== TaskStatus.SUCCESSFUL)).toEqual([]);
    const stillDeferred = await app.queue.getResults(reminders.map((run) => run.id));
    expect(stillDeferred.map((run) => run?.status)).toEqual(reminders.map(() => TaskStatus.READY));
  });
});
