import { TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FailService, MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { WorkerProcess } from '../support/worker-process.js';

/** Resolves once the lease of run `id` records that its attempt started (its holder sent the start mark). */
async function startRecorded(app: Harness, id: string): Promise<void> {
  const { client } = app.backend.connections;
  await waitUntil('the start of the attempt is recorded', async () => {
    const lease = await client.hget(app.backend.keys.leases, id);
    return lease?.split('|')[4] === '1';
  });
}

describe('the worker application (real processes, real signals)', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function producer(alias = uniqueAlias('e2e')): Promise<Harness> {
    const app = await Harness.start({ options: { alias } });
    cleanup.push(() => app.close());
    return app;
  }

  /** A pool of one process unless `args` says otherwise. */
  function worker(alias: string, args: string[], env?: Record<string, string>): WorkerProcess {
    const process = WorkerProcess.start(alias, ['--workers', '1', ...args], env);
    cleanup.push(() => process.stop());
    return process;
  }

  it('drains the queues and exits 0 with --exit-empty', async () => {
    const app = await producer();
    const results = await app.queue.enqueueMany([
      ...Array.from({ length: 300 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
      ...Array.from({ length: 100 }, (_, i) => ({ task: 'math.multiply', args: [i, 2] })),
    ]);
    const exit = await worker(app.alias, ['--exit-empty', '--concurrency', '8']).waitForExit();
    expect(exit).toEqual({ code: 0, signal: null });
    const finished = await app.queue.getResults(results.map((r) => r.id));
    expect(finished.every((r) => r?.status === TaskStatus.SUCCESSFUL && r.attempts === 1)).toBe(true);
    expect(finished.map((r) => r!.returnValue)).toEqual([
      ...Array.from({ length: 300 }, (_, i) => i + 1),
      ...Array.from({ length: 100 }, (_, i) => i * 2),
    ]);
    for (const counts of await app.queue.counts()) {
      expect(counts).toMatchObject({ ready: 0, deferred: 0, running: 0 });
    }
  });

  it('with --exit-empty, waits for deferred runs and retries before exiting', async () => {
    const app = await producer();
    const deferred = await app.queue.enqueue(MathService, 'add', [1, 1], { delayMs: 700 });
    const flaky = await app.queue.enqueue(FailService, 'flaky', [2]);
    const started = Date.now();
    const exit = await worker(app.alias, ['--exit-empty']).waitForExit();
    expect(exit.code).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect((await app.queue.getResult(deferred.id)).status).toBe(TaskStatus.SUCCESSFUL);
    expect(await app.queue.getResult(flaky.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 3 });
  });

  it('on SIGTERM finishes running runs, hands prefetched ones back and exits 0', async () => {
    const app = await producer();
    // The task needs a provider that Nest destroys at shutdown: the drain must come first.
    const results = await app.queue.enqueueMany(
      Array.from({ length: 12 }, () => ({ task: 'ResourceService.useAfter', args: [800] })),
    );
    const ids = results.map((r) => r.id);
    const proc = worker(app.alias, ['--concurrency', '2', '--prefetch', '4']);
    // Wait until the worker holds its 2 running + 4 prefetched runs.
    for (let i = 0; i < 200; i++) {
      const [counts] = await app.queue.counts(['default']);
      if (counts!.running === 6) break;
      await delay(20);
    }
    expect((await app.queue.counts(['default']))[0]!.running).toBe(6);
    proc.signal('SIGTERM');
    const exit = await proc.waitForExit();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(proc.log).toMatch(/Handed 4 prefetched run\(s\) back to READY/);

    const after = (await app.queue.getResults(ids)).map((r) => r!);
    expect(after.filter((r) => r.status === TaskStatus.RUNNING)).toEqual([]);
    const done = after.filter((r) => r.status === TaskStatus.SUCCESSFUL);
    expect(done).toHaveLength(2);
    for (const r of done) expect(r).toMatchObject({ attempts: 1, returnValue: 'used', errors: [] });
    const waiting = after.filter((r) => r.status === TaskStatus.READY);
    expect(waiting).toHaveLength(10);
    for (const r of waiting) expect(r).toMatchObject({ attempts: 0, workerIds: [], startedAt: null });
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 10, running: 0 });
  });

  it('stops hard on a second signal; the reaper recovers the runs', async () => {
    const app = await producer();
    const { id } = await app.queue.enqueue(SlowService, 'stubborn', [5_000]);
    const proc = worker(app.alias, ['--concurrency', '1'], { LEASE_TTL_MS: '1000', BROKER_INTERVAL_MS: '100' });
    await app.waitFor(id, (r) => r.status === TaskStatus.RUNNING);
    // Long enough for its start to be recorded: the abandoned attempt is charged.
    await startRecorded(app, id);
    proc.signal('SIGTERM');
    await proc.waitForOutput(/draining/);
    proc.signal('SIGTERM');
    expect((await proc.waitForExit()).code).toBe(1);

    const rescuer = worker(app.alias, ['--exit-empty'], { LEASE_TTL_MS: '1000', BROKER_INTERVAL_MS: '100' });
    expect((await rescuer.waitForExit()).code).toBe(0);
    const result = await app.queue.getResult(id);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 2, returnValue: 'done' });
    expect(result.errors.map((e) => e.errorClass)).toEqual(['AcknowledgementTimeoutError']);
  });

  it('stops hard at --shutdown-timeout, exits 1, and the reaper recovers the abandoned run', async () => {
    const app = await producer();
    const { id } = await app.queue.enqueue(SlowService, 'stubborn', [4_000]);
    const env = { LEASE_TTL_MS: '1000', BROKER_INTERVAL_MS: '100' };
    const proc = worker(app.alias, ['--shutdown-timeout', '1'], env);
    await app.waitFor(id, (r) => r.status === TaskStatus.RUNNING);
    await startRecorded(app, id);
    const signalled = Date.now();
    proc.signal('SIGTERM');
    expect((await proc.waitForExit()).code).toBe(1);
    expect(Date.now() - signalled).toBeLessThan(3_500);
    expect(proc.log).toMatch(/Shutdown timeout: abandoning 1 running attempt\(s\)/);

    expect((await worker(app.alias, ['--exit-empty'], env).waitForExit()).code).toBe(0);
    expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 2 });
  });

  it('logs JSON lines with --log-format json', async () => {
    const app = await producer();
    await app.queue.enqueue(MathService, 'add', [1, 1]);
    const proc = worker(app.alias, ['--exit-empty', '--log-format', 'json']);
    expect((await proc.waitForExit()).code).toBe(0);
    const lines = proc.log.trim().split('\n');
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) {
      const entry = JSON.parse(line) as { level: string; message: string; pid: number };
      expect(entry).toMatchObject({ level: expect.any(String), message: expect.any(String), pid: expect.any(Number) });
    }
    expect(lines.some((line) => line.includes('Queues are empty'))).toBe(true);
  });

  it('exits 2 with a message naming a bad flag', async () => {
    const proc = worker(uniqueAlias(), ['--concurrency', 'lots']);
    expect((await proc.waitForExit()).code).toBe(2);
    expect(proc.log).toMatch(/--concurrency must be an integer >= 1, got "lots"/);
  });

  it('exits 1 naming a --queues entry the module does not declare', async () => {
    const proc = worker(uniqueAlias(), ['--queues', 'default,nope']);
    expect((await proc.waitForExit()).code).toBe(1);
    expect(proc.log).toMatch(/queues: "nope" is not among the module's queues \(default, emails, reports\)/);
    expect(proc.log).toMatch(/runWorker's --queues/);
  });

  it('consumes only the queues it is given', async () => {
    const app = await producer();
    const onDefault = await app.queue.enqueue(MathService, 'add', [1, 1]);
    const onReports = await app.queue.enqueue('math.multiply', [2, 2]);
    expect((await worker(app.alias, ['--queues', 'reports', '--exit-empty']).waitForExit()).code).toBe(0);
    expect((await app.queue.getResult(onReports.id)).status).toBe(TaskStatus.SUCCESSFUL);
    expect((await app.queue.getResult(onDefault.id)).status).toBe(TaskStatus.READY);
  });
});
