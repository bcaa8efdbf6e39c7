import { TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** Whether `run` has reported its last of 4 steps (`SlowService.reporting`). */
const last = (run: TaskResult): boolean => (run.progress as { step?: number } | undefined)?.step === 4;

/** The step of the attempt a run's progress is from, as `WitnessService.countdown` reports it. */
type Countdown = { attempt: number; step: number } | undefined;

const lines = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);

describe('progress and logs of a run executed by a real worker pool', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('reach the producer process while the run runs (getResult and waitFor listeners) and stay after it ends', async () => {
    const app = await Harness.start({ options: { alias: uniqueAlias('progress') } });
    cleanup.push(() => app.close());
    const pool = WorkerProcess.start(app.alias, ['--workers', '1', '--concurrency', '2']);
    cleanup.push(() => pool.stop());

    const progress: unknown[] = [];
    const logged: string[] = [];
    // Waitable: registered before it is stored, so every value it reports is published to this process.
    const { id } = await app.queue.enqueue('SlowService.reporting', [4, 110, 2_000], { waitable: true });
    const done = app.queue.waitFor(id, {
      timeoutMs: 60_000,
      onProgress: (value) => progress.push(value),
      onLog: (line) => logged.push(line),
    });
    const running = await app.waitFor(id, (r) => r.logs.length === 100 && last(r), 30_000);
    // The task sleeps 2 s after its last report: seen before it ends.
    expect(running.status).toBe(TaskStatus.RUNNING);
    expect(running.logs).toEqual(lines(11, 110));

    const result = await done;
    expect(result).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 'reported',
      progress: { step: 4, of: 4 },
    });
    expect(result.logs).toEqual(lines(11, 110));
    expect(progress).toEqual([1, 2, 3, 4].map((step) => ({ step, of: 4 })));
    // Lines logged in one turn go out together, at most the last 100 of them.
    expect(logged).toEqual(lines(11, 110));
    expect(await app.queue.getResult(id)).toMatchObject({ progress: { step: 4, of: 4 }, logs: lines(11, 110) });
  });

  it("refuses the reports of a stopped worker's attempt once its lease was reaped: the retry's progress stays", async () => {
    const app = await Harness.start({ options: { alias: uniqueAlias('progress') } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    const env = { LEASE_TTL_MS: '1000' };
    const first = WorkerProcess.start(app.alias, ['--workers', '1', '--concurrency', '1'], env);
    cleanup.push(() => first.stop());
    const { id } = await app.queue.enqueue('WitnessService.countdown', [60, 100]);
    const progressOf = async (): Promise<Countdown> => (await app.queue.getResult(id)).progress as Countdown;
    await waitUntil('the first attempt reports', async () => ((await progressOf())?.step ?? 0) >= 3, 30_000);
    // The process that runs it stalls (SIGSTOP) past its lease: the broker reaps it, and another pool retries it.
    const [member] = (await witness.startPids()).get(id)!;
    process.kill(member!, 'SIGSTOP');
    cleanup.push(() => {
      // Woken for its pool's shutdown, should the test end before it does; gone already is fine.
      try {
        process.kill(member!, 'SIGCONT');
      } catch {
        // ESRCH: it exited.
      }
    });
    const second = WorkerProcess.start(app.alias, ['--workers', '1', '--concurrency', '1'], env);
    cleanup.push(() => second.stop());
    await waitUntil('the retry reports', async () => (await progressOf())?.attempt === 2, 30_000);

    // Woken, the stale attempt reports again: refused (LeaseLostError), it stops; nothing of it is stored.
    process.kill(member!, 'SIGCONT');
    await waitUntil('the stale attempt was refused', async () => (await witness.refused()).get('1') === 1, 30_000);
    expect((await progressOf())?.attempt).toBe(2);
    const done = await app.queue.waitFor(id, { timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 2, attempts: 2 });
    expect(done.progress).toEqual({ attempt: 2, step: 60 });
  });
});
