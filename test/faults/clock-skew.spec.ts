import { TaskInspector, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';
import { Witness } from '../support/witness.js';
import { WorkerProcess } from '../support/worker-process.js';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { membersOf, ScriptedProducer, SKEW_WARNING, skewedEnv } from './support/skewed-clocks.js';

/** How far each pool's and producer's wall clock runs ahead of the host's, and so of Redis's (ms). */
const OFFSETS = [-5_000, -150, 150, 5_000];
/** Past 500 ms off Redis's clock a process warns, once. */
const WARNS = (offsetMs: number) => Math.abs(offsetMs) > 500;
/** The limit of the `emails` queue. */
const RATE = { max: 10, perMs: 1_000 };
/** `WitnessService.keyedInterval`'s limit per key. */
const KEY_MAX = 10;
const RATE_RUNS = scale(40, 300);
const KEYED_RUNS = scale(40, 200);
/** Slots of the one-second schedule checked, each to fire exactly once. */
const SLOTS = scale(10, 60);
/** Debounced enqueues per key, and keys per producer. */
const DEBOUNCED = scale(5, 20);
const DEBOUNCE_KEYS = scale(1, 3);
/** Long enough that no stall of a loaded machine between a producer's enqueues ends a debounce window early. */
const DEBOUNCE_MS = 3_000;
const DELAY_MS = 2_000;
/** `WitnessService.flaky`: fails twice, retried after 300 ms, then 600 ms. */
const BACKOFF_MS = [300, 600];
/** How long outcomes are waited for: generous, as the machine may be busy. */
const DEADLINE_MS = scale(90_000, 300_000);

/** Worker ids are host:pid:slot. */
const pidOf = (workerId: string) => Number(workerId.split(':').at(-2));

/** Whether `starts` (ms, sorted) hold more than `max` in some window of `perMs`: any `max + 1` in a row span at least `perMs`. */
function tightestSpan(starts: readonly number[], max: number): number {
  return Math.min(...starts.slice(max).map((at, i) => at - starts[i]!));
}

describe('fault: worker and producer clocks offset from Redis by -5 s, -150 ms, +150 ms, +5 s', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it(
    'every run finishes once, rate limits hold by one clock, schedules fire each slot once, retries wait their backoff',
    async () => {
      const app = await Harness.start({ options: { alias: uniqueAlias('skew') } });
      const witness = new Witness(app.alias);
      cleanup.push(
        () => app.close(),
        () => witness.close(),
      );
      const inspector = app.module.get(TaskInspector);
      await inspector.setRateLimit('emails', RATE);

      // A pool and a producer per offset, each pool declaring the one-second schedule.
      const pools = OFFSETS.map((offsetMs) => {
        const pool = WorkerProcess.start(app.alias, ['--workers', '1', '--concurrency', '4'], {
          ...skewedEnv(offsetMs),
          SCHEDULE_EVERY_MS: '1000',
        });
        cleanup.push(() => pool.stop());
        return { offsetMs, pool };
      });
      const producers = OFFSETS.map((offsetMs) => {
        const producer = ScriptedProducer.start(app.alias, offsetMs);
        cleanup.push(() => producer.stop());
        return producer;
      });
      await Promise.all(producers.map((producer) => producer.booted()));
      await waitUntil(
        'every pool member reported its clock',
        async () =>
          (await app.backend.workers()).filter((w) => w.clockOffsetMs !== undefined).length === OFFSETS.length,
        60_000,
      );
      // The clock offset of each pool member, by pid: the preload shifts its
      // Date by exactly that, so a time it logs minus its offset is the
      // host's clock, one clock for every process (Redis's too: same host).
      const offsetOf = new Map<number, number>();
      for (const { offsetMs, pool } of pools) for (const pid of membersOf(pool)) offsetOf.set(pid, offsetMs);
      const hostTime = (pid: number, at: number) => {
        expect(offsetOf.has(pid), `process ${pid} is a member of a skewed pool`).toBe(true);
        return at - offsetOf.get(pid)!;
      };

      // Runs enqueued by this process (its clock is the host's): what only workers' clocks can break.
      const limited = await app.queue.enqueueMany(
        Array.from({ length: RATE_RUNS }, () => ({ task: 'WitnessService.interval', args: [5], queue: 'emails' })),
      );
      const keyed = await app.queue.enqueueMany(
        Array.from({ length: KEYED_RUNS }, (_, i) => ({
          task: 'WitnessService.keyedInterval',
          args: [i % 2 === 0 ? 'A' : 'B', 5],
        })),
      );
      const keyOf = new Map(keyed.map((run, i) => [run.id, i % 2 === 0 ? 'A' : 'B']));
      const flaky = await app.queue.enqueueMany(OFFSETS.map(() => ({ task: 'WitnessService.flaky', args: [2] })));
      const timed = await app.queue.enqueueMany(OFFSETS.map(() => ({ task: 'WitnessService.timed', args: [60_000] })));

      // Runs enqueued by the skewed producers: a delay, a debounce, a cancel each.
      const replies = await Promise.all(
        producers.map(async (producer) => {
          const delayed = await producer.enqueue<TaskResult>('WitnessService.work', [5], { delayMs: DELAY_MS });
          const debounced: ProducerResult[] = [];
          for (let key = 0; key < DEBOUNCE_KEYS; key++) {
            const dedupe = { key: `debounce:${producer.offsetMs}:${key}`, mode: 'debounce', ttlMs: DEBOUNCE_MS };
            for (let i = 0; i < DEBOUNCED; i++) {
              const label = `${producer.offsetMs}:${key}:${i}`;
              debounced.push({
                label,
                key,
                reply: await producer.enqueue('WitnessService.label', [label], { dedupe }),
              });
            }
          }
          const cancellable = await producer.enqueue<TaskResult>('WitnessService.cancellable', [120_000]);
          return { producer, delayed, debounced, cancellable };
        }),
      );
      for (const { delayed, debounced, cancellable } of replies) {
        for (const reply of [delayed, cancellable, ...debounced.map((d) => d.reply)])
          expect(reply.error).toBeUndefined();
      }
      // Each producer cancels its own run once that run has started.
      const cancelled = replies.map(({ cancellable }) => cancellable.result!.id);
      await waitUntil(
        'the cancellable runs started',
        async () => {
          const starts = await witness.starts();
          return cancelled.every((id) => starts.get(id) === 1);
        },
        DEADLINE_MS,
      );
      for (const { producer, cancellable } of replies) {
        const outcome = await producer.cancel(cancellable.result!.id);
        expect(outcome).toEqual({ result: { id: cancellable.result!.id, cancelled: true, previousStatus: 'RUNNING' } });
      }

      // Everything finishes.
      const delayedIds = replies.map(({ delayed }) => delayed.result!.id);
      const debouncedIds = [...new Set(replies.flatMap(({ debounced }) => debounced.map((d) => d.reply.result!.id)))];
      const succeeding = [...limited, ...keyed, ...flaky].map((run) => run.id).concat(delayedIds, debouncedIds);
      const timedIds = timed.map((run) => run.id);
      await waitUntil(
        'every run finished',
        async () => {
          const results = await app.queue.getResults([...succeeding, ...timedIds, ...cancelled]);
          return results.every((r) => r !== null && r.status !== TaskStatus.READY && r.status !== TaskStatus.RUNNING);
        },
        DEADLINE_MS,
      );
      await waitUntil(
        'the cancelled attempts were aborted',
        async () => {
          const aborts = await witness.aborts();
          return [...cancelled, ...timedIds].every((id) => aborts.has(id));
        },
        DEADLINE_MS,
      );

      // The schedule: from the first slot seen, SLOTS more slots, each fired once.
      const ticks = async () =>
        new Map(
          [...(await witness.startPids())]
            .filter(([key]) => key.startsWith('tick@'))
            .map(([key, pids]) => [Date.parse(key.slice('tick@'.length, key.indexOf('|'))), pids.length]),
        );
      await waitUntil('a slot fired', async () => (await ticks()).size > 0, DEADLINE_MS);
      const first = Math.min(...(await ticks()).keys());
      await waitUntil(`${SLOTS} more slots fired`, async () => (await ticks()).has(first + SLOTS * 1_000), DEADLINE_MS);

      const results = new Map(
        (await app.queue.getResults([...succeeding, ...timedIds, ...cancelled])).map((r) => [r!.id, r!]),
      );
      const completions = await witness.completions();
      const starts = await witness.starts();
      const executions = await witness.intervals();

      // Every run the queue, the keys, the retries, the delays and the debounces ran ended SUCCESSFUL, once.
      const statuses: Record<string, number> = {};
      for (const result of results.values()) statuses[result.status] = (statuses[result.status] ?? 0) + 1;
      const unfinished = succeeding.filter((id) => results.get(id)!.status !== TaskStatus.SUCCESSFUL);
      const notOnce = succeeding.filter((id) => completions.get(id) !== 1);
      expect(unfinished).toEqual([]);
      expect(notOnce).toEqual([]);
      const intervalsPerRun = new Map<string, number>();
      for (const { id } of executions) intervalsPerRun.set(id, (intervalsPerRun.get(id) ?? 0) + 1);
      expect([...intervalsPerRun.values()].every((n) => n === 1)).toBe(true);
      expect(intervalsPerRun.size).toBe(RATE_RUNS + KEYED_RUNS);
      for (const id of [...limited, ...keyed].map((run) => run.id)) expect(results.get(id)!.attempts).toBe(1);

      // The queue's limit, by the host's clock: at most max starts in any perMs.
      const limitedIds = new Set(limited.map((run) => run.id));
      const startsOf = (keep: (id: string) => boolean) =>
        executions
          .filter(({ id }) => keep(id))
          .map(({ pid, start }) => hostTime(pid, start))
          .sort((a, b) => a - b);
      const queueStarts = startsOf((id) => limitedIds.has(id));
      const queueTightest = tightestSpan(queueStarts, RATE.max);
      expect(queueTightest, `the tightest ${RATE.max + 1} starts of the limited queue (ms)`).toBeGreaterThanOrEqual(
        RATE.perMs,
      );
      const keyTightest = ['A', 'B'].map((key) => {
        const keyStarts = startsOf((id) => keyOf.get(id) === key);
        expect(keyStarts).toHaveLength(KEYED_RUNS / 2);
        const tightest = tightestSpan(keyStarts, KEY_MAX);
        expect(tightest, `the tightest ${KEY_MAX + 1} starts of key ${key} (ms)`).toBeGreaterThanOrEqual(1_000);
        return tightest;
      });
      // Every pool started rate-limited runs: none handed back all it claimed for
      // a clock it misread (issue 44: a pool 150 ms ahead of Redis started none).
      const limitedOffsets = new Set(
        executions.filter(({ id }) => limitedIds.has(id) || keyOf.has(id)).map(({ pid }) => offsetOf.get(pid)),
      );
      expect([...limitedOffsets].sort((a, b) => a! - b!)).toEqual(OFFSETS);

      // Retries: each run failed twice, then succeeded on its third attempt, each retry no sooner than its backoff.
      const attempts = await witness.client.lrange(`witness:${app.alias}:attempts`, 0, -1);
      for (const run of flaky) {
        expect(results.get(run.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 3, returnValue: 3 });
        expect(results.get(run.id)!.errors.map((e) => e.errorClass)).toEqual(['FixtureError', 'FixtureError']);
        const at = attempts
          .map((entry) => entry.split(' '))
          .filter(([, id]) => id === run.id)
          .map(([pid, , attempt, ms]) => ({ attempt: Number(attempt), at: hostTime(Number(pid), Number(ms)) }));
        expect(at.map((a) => a.attempt)).toEqual([1, 2, 3]);
        // Redis stamps in whole ms: a retry may read as up to 2 ms early.
        expect(at[1]!.at - at[0]!.at).toBeGreaterThanOrEqual(BACKOFF_MS[0]! - 2);
        expect(at[2]!.at - at[1]!.at).toBeGreaterThanOrEqual(BACKOFF_MS[1]! - 2);
      }

      // Delays from skewed producers: due by Redis's clock, never early, run once.
      for (const id of delayedIds) {
        const run = results.get(id)!;
        expect(run.startedAt!.getTime() - run.enqueuedAt.getTime()).toBeGreaterThanOrEqual(DELAY_MS);
      }

      // Debounces from skewed producers: one run per key, with the last arguments, started after the quiet period.
      const labels = await witness.labels();
      for (const { producer, debounced } of replies) {
        for (let key = 0; key < DEBOUNCE_KEYS; key++) {
          const ofKey = debounced.filter((d) => d.key === key);
          const ids = new Set(ofKey.map((d) => d.reply.result!.id));
          expect(ids.size, `runs of debounce key ${key} of the producer at ${producer.offsetMs} ms`).toBe(1);
          const run = results.get([...ids][0]!)!;
          const last = ofKey.at(-1)!.label;
          expect(run).toMatchObject({ status: TaskStatus.SUCCESSFUL, args: [last], attempts: 1 });
          expect(run.startedAt!.getTime()).toBeGreaterThanOrEqual(run.runAfter!.getTime());
          expect(labels.get(last)).toBe(1);
        }
      }
      expect(labels.size).toBe(debouncedIds.length);

      // Cancels from skewed producers: CANCELLED, their attempt aborted, started once.
      const aborts = await witness.aborts();
      for (const id of cancelled) {
        expect(results.get(id)!.status).toBe(TaskStatus.CANCELLED);
        expect(aborts.get(id)!.reason).toBe('CancelledError');
        expect(starts.get(id)).toBe(1);
      }
      // Timeouts: FAILED by a TaskTimeoutError after one attempt, aborted, started once.
      for (const id of timedIds) {
        const run = results.get(id)!;
        expect(run.status).toBe(TaskStatus.FAILED);
        expect(run.attempts).toBe(1);
        expect(run.errors.map((e) => e.errorClass)).toEqual(['TaskTimeoutError']);
        expect(aborts.get(id)!.reason).toBe('TaskTimeoutError');
        expect(starts.get(id)).toBe(1);
      }

      // The schedule fired every slot of the window exactly once, across the skewed pools.
      const fired = await ticks();
      const window = Array.from({ length: SLOTS + 1 }, (_, i) => first + i * 1_000);
      expect(window.map((slot) => fired.get(slot) ?? 0)).toEqual(window.map(() => 1));
      expect([...fired.keys()].every((slot) => (slot - first) % 1_000 === 0)).toBe(true);
      expect([...fired.values()].every((n) => n === 1)).toBe(true);

      // Each pool member estimated its own offset, and only those far off warned.
      const records = await app.backend.workers();
      expect(records).toHaveLength(OFFSETS.length);
      for (const record of records) {
        const offsetMs = offsetOf.get(pidOf(record.id))!;
        expect(
          Math.abs(record.clockOffsetMs! - offsetMs),
          `${record.id} estimated ${record.clockOffsetMs} ms`,
        ).toBeLessThanOrEqual(100);
      }
      for (const { offsetMs, pool } of pools)
        expect(SKEW_WARNING.test(pool.log), `pool at ${offsetMs} ms`).toBe(WARNS(offsetMs));
      for (const producer of producers) {
        expect(SKEW_WARNING.test(producer.log), `producer at ${producer.offsetMs} ms`).toBe(WARNS(producer.offsetMs));
      }

      const runs = succeeding.length + timedIds.length + cancelled.length;
      const duplicates = [...completions.values()].reduce((sum, n) => sum + Math.max(n - 1, 0), 0);
      report({
        scenario: 'Worker and producer clocks offset from Redis',
        runs,
        faults: `clocks of 4 pools (1 process × 4 slots) and 4 producers offset by ${OFFSETS.map((ms) => `${ms > 0 ? '+' : ''}${ms} ms`).join(', ')}`,
        lost: unfinished.length,
        duplicates,
        duplicateBound: 0,
        notes:
          `a queue limited to ${RATE.max}/s (${RATE_RUNS} runs, tightest ${RATE.max + 1} starts ${queueTightest} ms apart by the host's clock, rate-limited runs started by pools at ${[...limitedOffsets].sort((a, b) => a! - b!).join(', ')} ms), ` +
          `a task limited to ${KEY_MAX}/s per key (${KEYED_RUNS} runs, tightest ${keyTightest.join(' / ')} ms), ` +
          `${SLOTS + 1} slots of a 1 s schedule each fired once, ${flaky.length} runs retried twice with backoff, ` +
          `${delayedIds.length} delayed, ${debouncedIds.length} debounced, ${cancelled.length} cancelled and ${timedIds.length} timed out from skewed clocks; ` +
          `final statuses ${JSON.stringify(statuses)}; the test's own Redis, no Redis fault, the witness's times taken by the host's clock`,
      });
      expect(duplicates).toBe(0);
    },
    SCENARIO_TIMEOUT_MS,
  );
});

/** One debounced enqueue of a producer: its label, its key's index, the reply. */
interface ProducerResult {
  readonly label: string;
  readonly key: number;
  readonly reply: { result?: TaskResult; error?: string };
}
