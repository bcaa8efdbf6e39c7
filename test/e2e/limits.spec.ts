import { TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';

/** Worker ids are host:pid:slot. */
const pidOf = (workerId: string) => Number(workerId.split(':').at(-2));

/** The most intervals open at once: ends sort before starts at the same ms (an end frees its slot first). */
function peakOverlap(intervals: readonly { start: number; end: number }[]): number {
  const events = intervals.flatMap(({ start, end }) => [
    [start, 1],
    [end, -1],
  ]);
  events.sort(([a, da], [b, db]) => a! - b! || da! - db!);
  let open = 0;
  let peak = 0;
  for (const [, delta] of events) peak = Math.max(peak, (open += delta!));
  return peak;
}

/**
 * When each execution ran, for a check of how many ran at once. A killed
 * execution never ends: it counts as running from its start until its lease
 * could have expired, no sooner than two thirds of a lease after the kill (it
 * was renewed at most a third of a lease before); a shorter span than the cap
 * really holds it, so this witness cannot see a violation that is not one.
 */
function spansOf(
  executions: readonly { pid: number; start: number; end: number | null }[],
  killedAt: ReadonlyMap<number, number>,
  leaseTtlMs: number,
): { start: number; end: number }[] {
  return executions.map(({ pid, start, end }) => {
    if (end !== null) return { start, end };
    expect(killedAt.has(pid), `an execution in process ${pid}, which was not killed, never ended`).toBe(true);
    return { start, end: killedAt.get(pid)! + leaseTtlMs / 2 };
  });
}

/**
 * SIGKILLs a worker process holding runs, up to `times` times (another each
 * time), `pauseMs` apart; returns when each died (by pid). It stops early
 * once `drained` holds: on a loaded machine the pools may boot one after
 * another and the first one drain the rest before another holds a run (the
 * callers assert that a kill interrupted an execution).
 */
async function killHolders(
  app: Harness,
  times: number,
  pauseMs: number,
  drained: () => Promise<boolean>,
): Promise<Map<number, number>> {
  const killedAt = new Map<number, number>();
  const holder = async () => (await app.backend.workers()).find((w) => w.held > 0 && !killedAt.has(pidOf(w.id)));
  for (let kill = 0; kill < times; kill++) {
    let victim: Awaited<ReturnType<typeof holder>>;
    await waitUntil(
      'a process holds runs, or every run is done',
      async () => (victim = await holder()) !== undefined || (killedAt.size > 0 && (await drained())),
      60_000,
    );
    if (victim === undefined) break;
    killedAt.set(pidOf(victim.id), Date.now());
    process.kill(pidOf(victim.id), 'SIGKILL');
    await delay(pauseMs);
  }
  return killedAt;
}

describe('rate limits and concurrency caps, per queue and per key, across real worker pools', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function setup(prefix: string) {
    const app = await Harness.start({ options: { alias: uniqueAlias(prefix) } });
    const witness = new Witness(app.alias);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
    );
    return { app, witness, inspector: app.module.get(TaskInspector) };
  }

  function pools(alias: string, args: string[], env: Record<string, string> = {}): WorkerProcess[] {
    return [0, 1, 2].map(() => {
      const proc = WorkerProcess.start(alias, args, env);
      cleanup.push(() => proc.stop());
      return proc;
    });
  }

  it('starts at most 50 runs of a limited queue in any 1 s window across 3 pools for 10 s, uncharged, while another queue runs freely', async () => {
    const { app, witness, inspector } = await setup('rate');
    await inspector.setRateLimit('emails', { max: 50, perMs: 1_000 });
    const limited = await app.queue.enqueueMany(
      Array.from({ length: 450 }, () => ({ task: 'WitnessService.interval', args: [5], queue: 'emails' })),
    );
    const free = await app.queue.enqueueMany(
      Array.from({ length: 200 }, () => ({ task: 'WitnessService.interval', args: [20] })),
    );
    const startedAt = Date.now();
    pools(app.alias, ['--workers', '1', '--concurrency', '8']);
    const all = [...limited, ...free].map((run) => run.id);
    await waitUntil('every run done', async () => (await witness.completions()).size === all.length, 120_000);

    const limitedIds = new Set(limited.map((run) => run.id));
    const executions = await witness.intervals();
    // Each run executed once: a run handed back too late to start never ran.
    expect(executions).toHaveLength(all.length);
    const starts = executions
      .filter((execution) => limitedIds.has(execution.id))
      .map((execution) => execution.start)
      .sort((a, b) => a - b);
    // At most 50 in any 1 s window: any 51 starts in a row span at least 1 s.
    const tightest = Math.min(...starts.slice(50).map((at, i) => at - starts[i]!));
    expect(tightest).toBeGreaterThanOrEqual(1_000);
    // The limit was the bottleneck: 450 runs took about 9 windows and more.
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(8_000);
    // The other queue kept running: it was done long before the limited one.
    const freeEnds = executions.filter((execution) => !limitedIds.has(execution.id)).map((e) => e.end!);
    expect(Math.max(...freeEnds)).toBeLessThan(starts.at(-50)!);
    // Held back and handed back runs were never charged an attempt.
    const results = await app.queue.getResults(all);
    expect(results.map((run) => `${run!.status}/${run!.attempts}`)).toEqual(
      all.map(() => `${TaskStatus.SUCCESSFUL}/1`),
    );
    expect(Date.now() - startedAt).toBeLessThan(120_000);
  }, 180_000);

  it('never runs 6 runs of a queue capped at 5 across 3 pools while their processes are SIGKILLed', async () => {
    const { app, witness, inspector } = await setup('cap');
    const LEASE_TTL_MS = 1_500;
    await inspector.setConcurrencyCap('default', 5);
    const runs = await app.queue.enqueueMany(
      Array.from({ length: 60 }, () => ({ task: 'WitnessService.interval', args: [300] })),
    );
    const ids = runs.map((run) => run.id);
    const env = { LEASE_TTL_MS: String(LEASE_TTL_MS), BROKER_INTERVAL_MS: '100' };
    pools(app.alias, ['--workers', '1', '--concurrency', '4'], env);

    // Kill a process holding runs, four times over, while the queue drains.
    const killedAt = await killHolders(app, 4, 1_500, async () => (await witness.completions()).size === ids.length);
    await waitUntil('every run done', async () => (await witness.completions()).size === ids.length, 120_000);

    const executions = await witness.intervals();
    const spans = spansOf(executions, killedAt, LEASE_TTL_MS);
    expect(executions.some((execution) => execution.end === null)).toBe(true);
    const peak = peakOverlap(spans);
    expect(peak).toBeLessThanOrEqual(5);
    // The cap, not the pools (12 slots), was what held them back.
    expect(peak).toBeGreaterThanOrEqual(4);
    const results = await app.queue.getResults(ids);
    expect(results.every((run) => run!.status === TaskStatus.SUCCESSFUL)).toBe(true);
    expect((await inspector.overview(1)).find((q) => q.queue === 'default')).toMatchObject({ concurrencyCap: 5 });
  }, 180_000);

  it('starts at most 10 runs of each key in any 1 s window across 3 pools, uncharged, while an unlimited task of the queue runs freely', async () => {
    const { app, witness } = await setup('keyed-rate');
    // Keys A and B, interleaved, then the unlimited task, all in the default queue.
    const keyed = await app.queue.enqueueMany(
      Array.from({ length: 100 }, (_, i) => ({
        task: 'WitnessService.keyedInterval',
        args: [i % 2 === 0 ? 'A' : 'B', 5],
      })),
    );
    const free = await app.queue.enqueueMany(
      Array.from({ length: 150 }, () => ({ task: 'WitnessService.interval', args: [20] })),
    );
    const keyOf = new Map(keyed.map((run, i) => [run.id, i % 2 === 0 ? 'A' : 'B']));
    pools(app.alias, ['--workers', '1', '--concurrency', '8']);
    const all = [...keyed, ...free].map((run) => run.id);
    await waitUntil('every run done', async () => (await witness.completions()).size === all.length, 60_000);

    const executions = await witness.intervals();
    // Each run executed once: a run handed back too late to start never ran.
    expect(executions).toHaveLength(all.length);
    for (const key of ['A', 'B']) {
      const starts = executions
        .filter((execution) => keyOf.get(execution.id) === key)
        .map((execution) => execution.start)
        .sort((a, b) => a - b);
      expect(starts).toHaveLength(50);
      // At most 10 in any 1 s window: any 11 starts in a row span at least 1 s.
      const tightest = Math.min(...starts.slice(10).map((at, i) => at - starts[i]!));
      expect(tightest, `the tightest 11 starts of key ${key}`).toBeGreaterThanOrEqual(1_000);
      // The limit was the bottleneck: 50 runs took about 5 windows and more.
      expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(4_000);
    }
    // The unlimited task was not held back by the keys' runs ahead of it: all
    // of it was done before the keys' last windows.
    const keyedStarts = executions.filter((e) => keyOf.has(e.id)).map((e) => e.start);
    const freeEnds = executions.filter((e) => !keyOf.has(e.id)).map((e) => e.end!);
    expect(Math.max(...freeEnds)).toBeLessThan(Math.max(...keyedStarts) - 2_000);
    // Held back (parked) and handed back runs were never charged an attempt.
    const results = await app.queue.getResults(all);
    expect(results.map((run) => `${run!.status}/${run!.attempts}`)).toEqual(
      all.map(() => `${TaskStatus.SUCCESSFUL}/1`),
    );
  }, 90_000);

  it('never runs 3 runs of one key capped at 2 across 3 pools while their processes are SIGKILLed', async () => {
    const { app, witness } = await setup('keyed-cap');
    const LEASE_TTL_MS = 1_500;
    const keyed = await app.queue.enqueueMany(
      Array.from({ length: 40 }, (_, i) => ({
        task: 'WitnessService.cappedInterval',
        args: [i % 2 === 0 ? 'A' : 'B', 300],
      })),
    );
    const keyOf = new Map(keyed.map((run, i) => [run.id, i % 2 === 0 ? 'A' : 'B']));
    const ids = keyed.map((run) => run.id);
    const env = { LEASE_TTL_MS: String(LEASE_TTL_MS), BROKER_INTERVAL_MS: '100' };
    pools(app.alias, ['--workers', '1', '--concurrency', '4'], env);

    // Kill a process holding runs, twice, while the keys drain.
    const killedAt = await killHolders(app, 2, 1_000, async () => (await witness.completions()).size === ids.length);
    await waitUntil('every run done', async () => (await witness.completions()).size === ids.length, 60_000);

    const executions = await witness.intervals();
    expect(executions.some((execution) => execution.end === null)).toBe(true);
    for (const key of ['A', 'B']) {
      const ofKey = executions.filter((execution) => keyOf.get(execution.id) === key);
      const spans = spansOf(ofKey, killedAt, LEASE_TTL_MS);
      const peak = peakOverlap(spans);
      expect(peak, `the most runs of key ${key} at once`).toBeLessThanOrEqual(2);
      // The cap, not the pools (12 slots), was what held them back.
      expect(peak).toBe(2);
    }
    const results = await app.queue.getResults(ids);
    expect(results.every((run) => run!.status === TaskStatus.SUCCESSFUL)).toBe(true);
  }, 90_000);
});

describe('context.retryAfter in a real worker pool', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it('puts a run back for the delay twice without charging an attempt, then it succeeds on attempt 1', async () => {
    const app = await Harness.start({ options: { alias: uniqueAlias('retry-after') } });
    const witness = new Witness(app.alias);
    const proc = WorkerProcess.start(app.alias, ['--workers', '1', '--concurrency', '2']);
    cleanup.push(
      () => app.close(),
      () => witness.close(),
      () => proc.stop(),
    );
    // The task has no retry policy: only retryAfter brings it back.
    const run = await app.queue.enqueue('WitnessService.throttled', [700, 2]);
    await waitUntil('the run completed', async () => (await witness.completed()) === 1, 30_000);
    // The witness records the completion before the worker's acknowledgement lands: wait for it.
    await waitUntil('its acknowledgement landed', async () => (await app.queue.getResult(run.id)).status !== 'RUNNING');
    const result = await app.queue.getResult(run.id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.attempts).toBe(1);
    expect(result.errors).toEqual([]);
    const log = (await witness.client.lrange(`witness:${app.alias}:throttled`, 0, -1)).map((entry) => {
      const [, attempt, at] = entry.split(' ');
      return { attempt: Number(attempt), at: Number(at) };
    });
    // Every execution was attempt 1; each came back no sooner than the delay.
    expect(log.map((entry) => entry.attempt)).toEqual([1, 1, 1]);
    expect(log[1]!.at - log[0]!.at).toBeGreaterThanOrEqual(700);
    expect(log[2]!.at - log[1]!.at).toBeGreaterThanOrEqual(700);
    const stats = await app.backend.stats('default');
    expect(stats['retried'] ?? 0).toBe(0);
    expect(stats['failed'] ?? 0).toBe(0);
  }, 60_000);
});
