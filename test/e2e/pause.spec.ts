import { TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** How long nothing may start while the queue is paused (the figure). */
const QUIET_MS = 5_000;

const sum = (counts: Map<string, number>): number => [...counts.values()].reduce((a, b) => a + b, 0);

describe('pausing a queue served by a real worker pool', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  function pool(alias: string): WorkerProcess {
    const process = WorkerProcess.start(alias, ['--workers', '2', '--concurrency', '2']);
    cleanup.push(() => process.stop());
    return process;
  }

  it('lets running runs finish, starts nothing while paused (across a pool restart), and runs everything once after resume', async () => {
    const app = await Harness.start({ options: { alias: uniqueAlias('pause') } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    const inspector = app.module.get(TaskInspector);
    // Retrying and non-retrying runs, slow enough that some are running when the pause comes.
    const enqueued = await app.queue.enqueueMany(
      Array.from({ length: 24 }, (_, i) =>
        i % 2 === 0 ? { task: 'WitnessService.work', args: [400] } : { task: 'WitnessService.once', args: [400, 0] },
      ),
    );
    const ids = enqueued.map((run) => run.id);
    const first = pool(app.alias);
    await waitUntil('runs executing', async () => (await witness.starts()).size >= 2);

    await inspector.pause('default');
    // The runs leased before the pause (running or prefetched) finish and are acknowledged.
    await waitUntil('no run leased', async () => (await app.queue.counts(['default']))[0]!.running === 0);
    const starts = await witness.starts();
    const completions = await witness.completions();
    expect([...starts.keys()].every((id) => completions.get(id) === 1 && starts.get(id) === 1)).toBe(true);
    const [paused] = await app.queue.counts(['default']);
    expect(paused!.ready).toBe(ids.length - starts.size);
    expect(paused!.ready).toBeGreaterThan(0);
    // A deferred run that comes due while paused waits too.
    const deferred = await app.queue.enqueue('WitnessService.once', [10, 0], { delayMs: 500 });
    ids.push(deferred.id);

    // Nothing new starts: the witness, outside Threadmill, counts every start.
    await delay(QUIET_MS);
    expect(sum(await witness.starts())).toBe(starts.size);
    const [quiet] = await app.queue.counts(['default']);
    expect(quiet).toMatchObject({ ready: paused!.ready + 1, deferred: 0, running: 0 });
    expect((await inspector.overview(1)).find((q) => q.queue === 'default')).toMatchObject({ paused: true });

    // The flag is in Redis: a restarted pool is paused as well.
    first.signal('SIGTERM');
    expect(await first.waitForExit(), first.log).toEqual({ code: 0, signal: null });
    const second = pool(app.alias);
    await waitUntil('both processes of the new pool are live', async () => (await inspector.liveWorkers()).length >= 2);
    await delay(2_000);
    expect(sum(await witness.starts())).toBe(starts.size);
    expect((await app.queue.counts(['default']))[0]!.running).toBe(0);

    const resumedAt = Date.now();
    await inspector.resume('default');
    await waitUntil('a run starts again', async () => sum(await witness.starts()) > starts.size);
    // Woken by the resume, not by the end of their blocked wait (10 s with
    // the default lease): half of that is a generous bound for a loaded machine.
    expect(Date.now() - resumedAt).toBeLessThan(5_000);
    // The witness counts a completion inside the task, before its outcome is
    // acknowledged: wait for the outcomes too.
    await waitUntil('every run done', async () => (await witness.completed()) === ids.length, 30_000);
    await waitUntil(
      'every outcome acknowledged',
      async () => (await app.queue.getResults(ids)).every((run) => run?.status === TaskStatus.SUCCESSFUL),
      30_000,
    );
    const results = await app.queue.getResults(ids);
    expect(results.map((run) => `${run!.status}/${run!.attempts}`)).toEqual(
      ids.map(() => `${TaskStatus.SUCCESSFUL}/1`),
    );
    expect([...(await witness.starts()).values()].every((n) => n === 1)).toBe(true);
    expect([...(await witness.completions()).values()].every((n) => n === 1)).toBe(true);
    second.signal('SIGTERM');
    expect(await second.waitForExit(), second.log).toEqual({ code: 0, signal: null });
  });
});
