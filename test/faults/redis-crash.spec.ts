import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { Witness } from '../support/witness.js';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';

const RUNS = scale(3_000, 20_000);

/**
 * How long before a crash Redis may have confirmed a write that never reached
 * the AOF. With `always` none: the write and its fsync come before the reply.
 * With `everysec`, while a background fsync is still running, Redis postpones
 * its AOF write but replies anyway; it stops postponing once the wall clock's
 * second has moved on twice (Redis 7.0, so under 3 s; 2,000 ms from 7.2),
 * and then writes at its next turn of the event loop (its cron runs every
 * 100 ms): 3.5 s leaves room for both. A write confirmed earlier was in the OS
 * before the crash.
 */
const CASES = [
  { fsync: 'everysec', windowMs: 3_500 },
  { fsync: 'always', windowMs: 0 },
] as const;
/** Slack for an acknowledgement to reach Redis after the witness counted its execution. */
const ACK_SLACK_MS = 1_000;

describe.each(CASES)('fault: kill -9 redis-server mid-drain, appendfsync $fsync', ({ fsync, windowMs }) => {
  let rig: FaultRig | undefined;
  afterEach(() => rig?.stop());

  it(
    'loses no write confirmed before its fsync window, then finishes every run',
    async () => {
      const pool = { workers: 2, concurrency: 16, prefetch: 4 };
      const capacity = pool.workers * (pool.concurrency + pool.prefetch);
      rig = await FaultRig.start({ appendfsync: fsync, leaseTtlMs: 2_000, ...pool });
      const active = rig;
      active.startPool();
      const completions = CompletionHistory.start(active.witness);
      // The producer keeps enqueueing through the crash, retrying unconfirmed
      // batches with the same ids. Only the task with a retry policy: leases
      // lapse in the outage with no worker dying, so a run without one that
      // had started would rightly end FAILED (AcknowledgementTimeoutError).
      const producing = active.enqueue(RUNS, 20, { batch: 250 });
      await active.completedAtLeast(RUNS * 0.3);
      const before = await active.witness.completed();
      const inFlight = await active.inFlight();
      const crashedAt = Date.now();
      await active.redis.kill('SIGKILL');
      const recent = await completions.stopAndCountSince(crashedAt - windowMs - ACK_SLACK_MS);
      await delay(1_000);
      await active.redis.restart();
      const ids = await producing;

      const results = await active.settle(ids, 120_000);
      const verdict = await active.verdict(ids, results);
      // With always, an applied write survives even an OS crash: only runs
      // leased at the crash may run again (all of them when the outage
      // outlasts their leases). The pool leases at most workers × (concurrency
      // + prefetch) runs; `inFlight` is a count taken a round trip before the
      // crash, so a claim may land in between. With everysec, the writes of the
      // window may be gone too: its enqueues (missing runs), and its claims and
      // acknowledgements, whose runs then run again.
      const duplicateBound = capacity + (windowMs > 0 ? recent : 0);
      report({
        scenario: `kill -9 redis-server mid-drain, restart from AOF (appendfsync ${fsync})`,
        runs: ids.length,
        faults: `1 crash with ${before} runs done and ${inFlight} leased; producer enqueueing throughout`,
        lost: verdict.lost.length,
        duplicates: verdict.duplicates,
        duplicateBound,
        started: verdict.started,
        charged: verdict.charged,
        notes:
          `final statuses ${JSON.stringify(verdict.statuses)}` +
          (windowMs > 0
            ? `; the crash undid ${verdict.missing.length} confirmed enqueues; ${recent} completions in its ${windowMs} ms window (+${ACK_SLACK_MS / 1_000} s)`
            : ''),
      });
      expect(ids).toHaveLength(RUNS);
      // A lost run can only be one whose enqueue the crash undid, confirmed within the window.
      expect(verdict.lost).toEqual(verdict.missing);
      const early = verdict.missing.filter((id) => active.confirmedAt.get(id)! <= crashedAt - windowMs);
      expect(early).toEqual([]);
      expect(verdict.duplicates).toBeLessThanOrEqual(duplicateBound);
      // The witness forgets nothing, and whatever Redis forgot it charged
      // again only after a new start: the crash can leave attempts uncharged
      // (they ran again), never charge one that did not start.
      expect(verdict.overcharged).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );
});

/** The witness's completion count, sampled every 100 ms, to tell how many executions completed since a time. */
class CompletionHistory {
  private readonly samples: { at: number; completed: number }[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  private constructor(private readonly witness: Witness) {
    this.loop = this.sample();
  }

  static start(witness: Witness): CompletionHistory {
    return new CompletionHistory(witness);
  }

  /** Stops sampling and returns the completions after `since` (an over-count: from the last sample at or before it). */
  async stopAndCountSince(since: number): Promise<number> {
    this.running = false;
    await this.loop;
    const latest = await this.witness.completed();
    const base = this.samples.filter((s) => s.at <= since).at(-1)?.completed ?? 0;
    return latest - base;
  }

  private async sample(): Promise<void> {
    while (this.running) {
      const completed = await this.witness.completed();
      // Stamped once the count is read, so the count is at most the one at `at`.
      this.samples.push({ at: Date.now(), completed });
      await delay(100);
    }
  }
}
