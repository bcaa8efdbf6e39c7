import { Test, type TestingModule } from '@nestjs/testing';
import { getTaskQueueToken, TaskQueue, TaskStatus, ThreadmillModule } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NamedPayments, NamedReports, NamedTasksModule } from '../fixtures/fixture-named-backends.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { WorkerProcess } from '../support/worker-process.js';

describe('a worker pool of one backend of an application with two (real processes)', () => {
  let critical: RedisServer;
  const cleanup: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    critical = await RedisServer.start();
  });

  afterAll(async () => {
    await critical.stop();
  });

  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** The producer: the worker's two backends, configured here (the fixture module reads its env at import). */
  async function producer(alias: string): Promise<TestingModule> {
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias, queues: ['default'] }),
        ThreadmillModule.forRoot({ name: 'critical', connection: critical.url, queues: ['payments'] }),
        NamedTasksModule,
      ],
    }).compile();
    module.useLogger(false);
    await module.init();
    cleanup.push(() => module.close());
    return module;
  }

  it("--backend critical runs only the critical backend's runs, on its Redis", async () => {
    const alias = uniqueAlias('named');
    const app = await producer(alias);
    const tasks = app.get(TaskQueue);
    const criticalTasks = app.get<TaskQueue>(getTaskQueueToken('critical'));
    const report = await tasks.enqueue(NamedReports, 'report', ['q1']);
    const charges = await criticalTasks.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ task: NamedPayments, method: 'charge' as const, args: [i] as [number] })),
    );

    const worker = WorkerProcess.start(
      alias,
      ['--backend', 'critical', '--workers', '1', '--exit-empty'],
      { CRITICAL_REDIS_URL: critical.url },
      false,
      'named-worker-main',
    );
    cleanup.push(() => worker.stop());
    expect(await worker.waitForExit(), worker.log).toEqual({ code: 0, signal: null });

    const done = await criticalTasks.getResults(charges.map((charge) => charge.id));
    expect(done.map((result) => result?.status)).toEqual(charges.map(() => TaskStatus.SUCCESSFUL));
    expect(done.map((result) => (result!.returnValue as { charged: number }).charged)).toEqual(
      charges.map((_, i) => i),
    );
    expect(new Set(done.map((result) => (result!.returnValue as { pid: number }).pid)).has(process.pid)).toBe(false);
    // The default backend's run was not the pool's to take.
    expect(await tasks.getResult(report.id)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    const raw = new Redis(critical.url);
    try {
      expect(await raw.hexists(`threadmill:{critical}:done`, charges[0]!.id)).toBe(1);
      expect(await raw.keys(`*${report.id}*`)).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });
});
