import { RetryNotice } from './retry-notice.js';
import type { LeaseStore } from '../backend/backend-roles.js';
import { Logger } from '@nestjs/common';
import type { Acknowledgement, LeaseRef } from '../backend/task-backend.js';
import { RunEvents, type StaleReason } from '../events/run-events.js';
import { sleep } from './notifier.js';
import { StaleAcknowledgementSummary } from './stale-acknowledgement-summary.js';

/** Acknowledgement batches sent at once. */
const MAX_BATCHES_IN_FLIGHT = 2;

/**
 * An acknowledgement to send, told once Redis applied it (`applied` true) or
 * discarded it because its lease had expired (false). One object per run: a
 * worker acknowledges thousands a second.
 */
export interface PendingAcknowledgement extends Acknowledgement {
  settled?(applied: boolean): void;
  /** Why it was discarded, asked only then; without it, `expired`. */
  staleReason?(): StaleReason;
}

/**
 * Batches acknowledgements: whatever accumulated is sent in one script call
 * on the next turn of the event loop, or as soon as the previous batch landed
 * when one is in flight, at most `batchSize` at a time. Under load batches
 * grow by themselves; an isolated outcome waits no timer.
 *
 * An acknowledgement is never dropped while the process lives: a failed batch
 * is retried. If the process dies first, the lease expires and the reaper
 * recovers the run (at-least-once). On a partitioned backend, the outcomes
 * of the partitions that answered are settled at once, and the rest of the
 * batch is retried without holding back later batches.
 *
 * Start marks ride along (see `StartMarks`): the starts recorded since the
 * last batch go with the next one, so that an expiry of their leases charges
 * their attempts (an expiry before then hands the run back uncharged).
 *
 * Acknowledgements Redis discards as stale are counted by reason (run
 * events, hence metrics) and summarised in the log, not logged per batch:
 * most are the late results of runs cancelled while they ran.
 */
export class Acknowledger {
  private pending: PendingAcknowledgement[] = [];
  /** Runs whose attempts' starts the next batch records. */
  private starts: LeaseRef[] = [];
  private scheduled = false;
  /** Batches being sent: a second full batch may go while one is in flight. */
  private readonly sending = new Set<Promise<void>>();
  /**
   * Batches being sent that wait only for partitions that did not answer (a
   * partitioned backend's master away): they do not hold back the next ones.
   */
  private stalled = 0;
  /** Acknowledgements of the batches being sent. */
  private inFlight = 0;
  private readonly logger = new Logger('Threadmill');
  private readonly notice = new RetryNotice('Acknowledging', this.logger);
  /** Acknowledgements Redis discarded because their lease had expired. */
  staleCount = 0;

  constructor(
    private readonly backend: LeaseStore,
    private readonly batchSize: number,
    private readonly events = new RunEvents(),
    private readonly summary = new StaleAcknowledgementSummary(),
  ) {}

  /** Queues `ack`; its `settled` is told once Redis applied or discarded it. */
  push(ack: PendingAcknowledgement): void {
    this.pending.push(ack);
    this.schedule();
  }

  /** Records, with the next batch, that the attempts of `runs` started. */
  recordStarts(runs: readonly LeaseRef[]): void {
    for (const run of runs) this.starts.push(run);
    this.schedule();
  }

  private schedule(): void {
    if (!this.scheduled && this.sending.size === this.stalled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.kick();
      });
    }
  }

  /** Acknowledgements not yet applied (queued or being sent). */
  get size(): number {
    return this.pending.length + this.inFlight;
  }

  /**
   * Sends everything pending now and resolves true once Redis applied it. With
   * `timeoutMs`, resolves false when that passes first (Redis is away): a
   * stopping worker must not hang, and acknowledgements that never arrive
   * leave their runs to the reaper, which recovers them after their lease.
   */
  async flush(timeoutMs?: number): Promise<boolean> {
    const drained = (async () => {
      while (this.pending.length > 0 || this.starts.length > 0 || this.sending.size > 0) {
        this.kick();
        await Promise.race(this.sending);
      }
      return true;
    })();
    if (timeoutMs === undefined) return drained;
    const timer = new AbortController();
    const flushed = await Promise.race([drained, sleep(timeoutMs, timer.signal).then(() => false)]);
    timer.abort();
    if (!flushed) {
      this.logger.warn(
        `Gave up flushing ${this.size} acknowledgement(s) after ${timeoutMs} ms; ` +
          'the reaper recovers their runs when their lease expires.',
      );
    }
    return flushed;
  }

  private kick(): void {
    // A batch goes out when none is in flight; a second one only when a full
    // batch is waiting, so concurrency never shrinks batches.
    for (;;) {
      const sending = this.sending.size - this.stalled;
      const waiting = this.pending.length > 0 || this.starts.length > 0;
      if (!((sending === 0 && waiting) || (sending < MAX_BATCHES_IN_FLIGHT && this.pending.length >= this.batchSize))) {
        return;
      }
      const sent: Promise<void> = this.send().finally(() => {
        this.sending.delete(sent);
        this.kick();
      });
      this.sending.add(sent);
    }
  }

  /** The runs whose starts this batch records. */
  private startedRuns(): LeaseRef[] {
    if (this.starts.length === 0) return this.starts;
    const runs = this.starts;
    this.starts = [];
    return runs;
  }

  private async send(): Promise<void> {
    const batch = this.pending.splice(0, this.batchSize);
    const started = this.startedRuns();
    this.inFlight += batch.length;
    /** Outcomes settled already, once some of the batch went unanswered. */
    let done: boolean[] | undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        const delay = Math.min(50 * 2 ** attempt, 2_000);
        try {
          const applied = await this.backend.acknowledge(batch, started);
          this.notice.succeeded();
          if (done === undefined && applied.includes(undefined)) {
            done = batch.map(() => false);
            // The rest waits for its partitions: later batches go meanwhile.
            this.stalled++;
            this.kick();
          }
          if (this.settle(batch, applied, done) === 0) return;
        } catch (error) {
          this.notice.failed(error, `in ${delay} ms (${batch.length} run(s))`);
        }
        await sleep(delay);
      }
    } finally {
      if (done !== undefined) this.stalled--;
    }
  }

  /**
   * Tells each outcome of `batch` whether it applied, but those whose
   * partition did not answer (undefined) and those `done` marks settled;
   * returns how many are left.
   */
  private settle(
    batch: readonly PendingAcknowledgement[],
    applied: readonly (boolean | undefined)[],
    done: boolean[] | undefined,
  ): number {
    let revoked = 0;
    let expired = 0;
    let left = 0;
    for (let i = 0; i < batch.length; i++) {
      const answer = applied[i];
      if (done !== undefined) {
        if (done[i]) continue;
        if (answer === undefined) {
          left++;
          continue;
        }
        done[i] = true;
      }
      if (!answer) {
        if (batch[i]!.staleReason?.() === 'revoked') revoked++;
        else expired++;
      }
      this.inFlight--;
      batch[i]!.settled?.(answer!);
    }
    if (revoked > 0) this.discarded(revoked, 'revoked');
    if (expired > 0) this.discarded(expired, 'expired');
    return left;
  }

  private discarded(count: number, reason: StaleReason): void {
    this.staleCount += count;
    this.events.staleAcknowledgements(count, reason);
    this.summary.count(reason, count);
  }
}
