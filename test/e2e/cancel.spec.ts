import { InvalidRunStateError, TaskStatus } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** A short lease: a renewal round (a third of it) is a second. */
const LEASE_TTL_MS = 3_000;
/**
 * What the abort may take beyond a renewal round, on a loaded 2-core machine:
 * the renewal call's round trip, and timers that fire late.
 */
const SLACK_MS = 750;

describe('cancelling runs from another process (real worker processes)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A producer (this test process) and a pool of real worker processes on a fresh keyspace. */
  async function setup(args: string[]) {
    const app = await Harness.start({ options: { alias: uniqueAlias('cancel'), leaseTtlMs: LEASE_TTL_MS } });
    const witness = new Witness(app.alias);
    const pool = WorkerProcess.start(app.alias, args, { LEASE_TTL_MS: String(LEASE_TTL_MS) });
    cleanup.push(
      () => app.close(),
      () => witness.close(),
      () => pool.stop(),
    );
    return { app, witness, pool };
  }

  it('aborts a running attempt within a renewal round; the run ends CANCELLED and its late return is discarded', async () => {
    const { app, witness, pool } = await setup(['--workers', '1', '--concurrency', '2']);
    const run = await app.queue.enqueue('WitnessService.cancellable', [60_000]);
    await waitUntil('the run started', async () => (await witness.starts()).get(run.id) === 1);
    const sentAt = Date.now();
    expect(await app.queue.cancel(run.id)).toEqual({ id: run.id, cancelled: true, previousStatus: 'RUNNING' });
    // The run is CANCELLED at once, before its worker has heard.
    expect((await app.queue.getResult(run.id)).status).toBe(TaskStatus.CANCELLED);

    await waitUntil('the attempt was aborted', async () => (await witness.aborts()).has(run.id), 10_000);
    const abort = (await witness.aborts()).get(run.id)!;
    expect(abort.reason).toBe('CancelledError');
    console.log(`[cancel] the attempt aborted ${abort.at - sentAt} ms after the cancel was sent`);
    expect(abort.at - sentAt, 'ms from the cancel to the abort').toBeLessThanOrEqual(LEASE_TTL_MS / 3 + SLACK_MS);

    // The task returned after the abort; its worker acknowledged, and the acknowledgement was discarded.
    await waitUntil('the late return', async () => (await witness.returns()).get(run.id) === 1);
    await waitUntil(
      'the late acknowledgement',
      async () => ((await app.backend.stats('default'))['staleAcks'] ?? 0) >= 1,
    );
    const result = await app.queue.getResult(run.id);
    expect(result).toMatchObject({ status: TaskStatus.CANCELLED, returnValue: undefined });
    expect((await witness.starts()).get(run.id)).toBe(1);
    expect(pool.log).toMatch(new RegExp(`Run ${run.id} was cancelled; aborting its attempt`));
  });

  it('withdraws a pending and a deferred run: neither ever starts', async () => {
    const { app, witness } = await setup(['--workers', '1', '--concurrency', '1', '--prefetch', '0']);
    const busy = await app.queue.enqueue('WitnessService.cancellable', [1_500]);
    await waitUntil('the busy run started', async () => (await witness.starts()).get(busy.id) === 1);
    const pending = await app.queue.enqueue('WitnessService.cancellable', [10]);
    const deferred = await app.queue.enqueue('WitnessService.cancellable', [10], { delayMs: 500 });
    expect(await app.queue.cancel(pending.id)).toMatchObject({ cancelled: true, previousStatus: 'READY' });
    expect(await app.queue.cancel(deferred.id)).toMatchObject({ cancelled: true, previousStatus: 'READY' });
    const after = await app.queue.enqueue('WitnessService.cancellable', [10]);
    expect((await app.queue.waitFor(after.id, { timeoutMs: 15_000 })).status).toBe(TaskStatus.SUCCESSFUL);
    // Past the deferred run's due time, and a broker pass later: still CANCELLED, never started.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const id of [pending.id, deferred.id]) {
      expect((await app.queue.getResult(id)).status).toBe(TaskStatus.CANCELLED);
      expect((await witness.starts()).get(id) ?? 0).toBe(0);
    }
    expect((await app.backend.counts(['default']))[0]).toMatchObject({ cancelled: 2, ready: 0, deferred: 0 });
  });

  it('cancels racing completion: each run ends SUCCESSFUL or CANCELLED, never both, never lost', async () => {
    const { app, witness } = await setup(['--workers', '2', '--concurrency', '4']);
    // Both processes consume before the race begins.
    const warm = await app.queue.enqueueMany(
      Array.from({ length: 16 }, () => ({ task: 'WitnessService.cancellable', args: [50] })),
    );
    for (const { id } of warm) await app.queue.waitFor(id, { timeoutMs: 30_000 });
    const count = 200;
    // Runs of 0-40 ms (every 25th of 2 s), each cancelled 0-60 ms after its enqueue: some before
    // they start, some while they run (the long ones are aborted), some after they returned, some
    // after they were acknowledged.
    const runs = await app.queue.enqueueMany(
      Array.from({ length: count }, (_, i) => ({
        task: 'WitnessService.cancellable',
        args: [i % 25 === 0 ? 2_000 : (i * 7) % 41],
      })),
    );
    const answers = await Promise.all(
      runs.map(async ({ id }, i) => {
        await new Promise((resolve) => setTimeout(resolve, (i * 13) % 61));
        return app.queue.cancel(id).then(
          (outcome) => ({ id, cancelled: outcome.cancelled, refused: undefined }),
          (error: unknown) => {
            expect(error).toBeInstanceOf(InvalidRunStateError);
            return { id, cancelled: false, refused: (error as InvalidRunStateError).status };
          },
        );
      }),
    );
    const ids = runs.map((run) => run.id);
    await waitUntil(
      'every run settled',
      async () => (await app.queue.getResults(ids)).every((r) => r && r.status !== 'READY' && r.status !== 'RUNNING'),
      30_000,
    );
    // Every late acknowledgement has arrived: each started attempt returned.
    await waitUntil('every started attempt returned', async () => {
      const [starts, returns] = await Promise.all([witness.starts(), witness.returns()]);
      return [...starts.keys()].every((id) => returns.get(id) === starts.get(id));
    });
    const [results, starts, returns, aborts] = await Promise.all([
      app.queue.getResults(ids),
      witness.starts(),
      witness.returns(),
      witness.aborts(),
    ]);
    // Per run, what happened, against the one story its final status allows: SUCCESSFUL (its
    // acknowledgement won; the cancel found it finished; never aborted; its return kept) or
    // CANCELLED (the cancel won; whatever its attempt returned later discarded). At most one
    // attempt each: a cancel is not a failure, and nothing else fails.
    const observed = results.map((result, i) => {
      const { id } = runs[i]!;
      return {
        id,
        status: result?.status,
        answer: answers[i],
        returnValue: result?.returnValue,
        aborted: aborts.get(id)?.reason,
        starts: starts.get(id) ?? 0,
        returns: returns.get(id) ?? 0,
      };
    });
    const story = (run: (typeof observed)[number]) =>
      run.status === TaskStatus.SUCCESSFUL
        ? {
            ...run,
            answer: { id: run.id, cancelled: false, refused: 'SUCCESSFUL' },
            returnValue: 'finished',
            aborted: undefined,
            starts: 1,
            returns: 1,
          }
        : {
            ...run,
            status: TaskStatus.CANCELLED,
            answer: { id: run.id, cancelled: true, refused: undefined },
            returnValue: undefined,
            aborted: run.aborted === undefined ? undefined : 'CancelledError',
            starts: Math.min(run.starts, 1),
            returns: run.starts,
          };
    expect(observed).toEqual(observed.map(story));
    const successful = observed.filter((run) => run.status === TaskStatus.SUCCESSFUL).length;
    const cancelled = observed.filter((run) => run.status === TaskStatus.CANCELLED).length;
    const cancelledStarted = observed.filter((run) => run.status === TaskStatus.CANCELLED && run.starts > 0).length;
    expect(successful + cancelled).toBe(count);
    const counts = (await app.backend.counts(['default']))[0]!;
    expect(counts).toMatchObject({ successful: successful + warm.length, cancelled, ready: 0, running: 0, failed: 0 });
    // Each cancelled attempt that started returned, and its acknowledgement was discarded: one each.
    await waitUntil(
      'the late acknowledgements',
      async () => ((await app.backend.stats('default'))['staleAcks'] ?? 0) >= cancelledStarted,
    );
    expect((await app.backend.stats('default'))['staleAcks'] ?? 0).toBe(cancelledStarted);
    console.log(
      `[cancel race] ${count} runs: ${successful} successful, ${cancelled} cancelled ` +
        `(${cancelledStarted} after they started, ${aborts.size} of them aborted)`,
    );
    // The race went both ways: some finished first, some were cancelled after they started.
    expect(successful).toBeGreaterThan(0);
    expect(cancelledStarted).toBeGreaterThan(0);
  });
});
