import { TaskStatus } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { WorkerProcess } from '../support/worker-process.js';

describe('worker settings from DI (ThreadmillWorkerModule) and Nest options through runWorker (real processes)', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function producer(): Promise<Harness> {
    const app = await Harness.start({ options: { alias: uniqueAlias('e2e') } });
    cleanup.push(() => app.close());
    return app;
  }

  /** The configured fixture worker: a pool of one process, its settings from a ConfigService-like provider. */
  function configuredWorker(alias: string, args: string[] = [], env: Record<string, string> = {}): WorkerProcess {
    const worker = WorkerProcess.start(
      alias,
      ['--workers', '1', ...args],
      { CONFIGURED_CONCURRENCY: '3', CONFIGURED_QUEUES: 'reports', ...env },
      false,
      'configured-worker-main',
    );
    cleanup.push(() => worker.stop());
    return worker;
  }

  it('runs with the settings forRootAsync gives, and logs every line through the custom logger', async () => {
    const app = await producer();
    const report = await app.queue.enqueue('math.multiply', [6, 7]);
    const other = await app.queue.enqueue('MathService.add', [1, 2]);
    const worker = configuredWorker(app.alias);
    await worker.waitForOutput(/consuming reports with concurrency 3/);
    expect((await app.waitFor(report.id)).returnValue).toBe(42);
    // The module's queues: the default queue is not consumed.
    expect((await app.queue.getResult(other.id)).status).toBe(TaskStatus.READY);

    // The supervisor's lines, Nest's and the worker's all went through the application's logger.
    const lines = worker.log.split('\n').filter((line) => line.trim() !== '');
    expect(lines.find((line) => /Supervising 1 worker process/.test(line))).toMatch(/^\[marked\] /);
    expect(lines.find((line) => /consuming reports with concurrency 3/.test(line))).toMatch(/^\[marked\] /);
    expect(lines.find((line) => /Registered \d+ task/.test(line))).toMatch(/^\[marked\] /);
  });

  it('a flag overrides the module (the module still gives what the flags leave)', async () => {
    const app = await producer();
    const worker = configuredWorker(app.alias, ['--concurrency', '5']);
    await worker.waitForOutput(/consuming reports with concurrency 5/);
    const report = await app.queue.enqueue('math.multiply', [2, 3]);
    expect((await app.waitFor(report.id)).returnValue).toBe(6);
  });

  it('an environment variable of a flag overrides the module too', async () => {
    const app = await producer();
    const worker = configuredWorker(app.alias, [], { THREADMILL_QUEUES: 'default' });
    await worker.waitForOutput(/consuming default with concurrency 3/);
    const run = await app.queue.enqueue('MathService.add', [2, 3]);
    expect((await app.waitFor(run.id)).returnValue).toBe(5);
  });
});
