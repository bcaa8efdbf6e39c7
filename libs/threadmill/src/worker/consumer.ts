import type { LeaseStore } from '../backend/backend-roles.js';
import { pastStartSlack, UnchargedDeferrals } from './uncharged-deferrals.js';
import { Logger } from '@nestjs/common';
import type { LeasedRun } from '../backend/task-backend.js';
import { ShutdownTimeoutError } from '../errors/shutdown-timeout.error.js';
import { RunEvents } from '../events/run-events.js';
import type { Acknowledger } from './acknowledger.js';
import { Claimer, type ClaimSink } from './claimer.js';
import type { ConsumerSettings } from './consumer-settings.js';
import { StartMarks } from './start-marks.js';
import { AttemptAcknowledgement, type AttemptSettler } from './attempt-acknowledgement.js';
import type { Lease, LeaseKeeper } from './lease-keeper.js';
import { Notifier, sleep } from './notifier.js';
import { PrefetchGauge } from './prefetch-gauge.js';
import type { Attempt, AttemptEnded, AttemptWatchers, TaskExecutor } from './task-executor.js';

/** Why a consumer stopped on its own. */
export type ConsumerEnd = 'empty' | 'max-tasks' | 'stopped' | 'crashed';

/** The most an adaptive prefetch grows to. */
const MAX_PREFETCH = 1_000;

/** How often a consumer holding prefetched runs samples its adaptive prefetch, whatever its claimer does. */
const SHED_CHECK_MS = 50;
/**
 * A consumer hands back what it holds beyond this many times its prefetch
 * (and the slack): far enough above it that a sample the event loop's pauses
 * lowered does not send back runs it would claim again at once.
 */
const SHED_FACTOR = 4;
/** Runs held beyond that which do not yet go back: a claim that lands as a slot fills is no excess. */
const SHED_SLACK = 16;

/** How long a stopping consumer keeps trying to deliver its last acknowledgements. */
const ACK_FLUSH_AT_STOP_MS = 10_000;

/**
 * The claim loop of one worker process. It holds at most `concurrency +
 * prefetch` runs: executing ones (at most `concurrency`), prefetched ones
 * waiting for a slot, and finished ones whose acknowledgement is not applied
 * yet. A slot frees as soon as its attempt returns; the acknowledgement
 * follows in the next batch. While busy it claims only when a worthwhile
 * share of that capacity is free, so claims carry batches; when its queues
 * run dry it sends a blocking claim, which Redis runs the moment a run is
 * enqueued. An attempt's start is recorded with the next acknowledgement
 * call (a suspect announces it before it starts, too), so that a lease that
 * expires before its run started is never charged. `stop()` drains: no new claims,
 * prefetched runs handed back to READY at once, executing ones finished and
 * acknowledged.
 */
export class Consumer implements AttemptSettler<Lease>, ClaimSink {
  private readonly logger = new Logger('Threadmill');
  private readonly capacityFreed = new Notifier();
  /** stop() was called; a plain field, read for every run dispatched. */
  private stopping = false;
  private readonly prefetched: Lease[] = [];
  /** Attempts executing: a count, not a set of promises (per-run garbage); drains wait on `attemptEnded`. */
  private running = 0;
  private readonly attemptEnded = new Notifier();
  /** Finished attempts whose acknowledgement is not applied yet. */
  private unacknowledged = 0;
  /** Calls under way that put runs back uncharged (`context.retryAfter`). */
  private readonly deferrals: UnchargedDeferrals;
  /** A suspect run is executing: nothing else may start beside it. */
  private suspectRunning = false;
  private loop: Promise<ConsumerEnd> | undefined;
  private readonly claimer: Claimer;
  private readonly startMarks: StartMarks;
  private readonly gauge: PrefetchGauge;
  /** Samples the gauge while runs wait here (see `accept`). */
  private shedTimer: NodeJS.Timeout | undefined;
  /** Runs this consumer finished (acknowledged), whatever their outcome. */
  completed = 0;
  /** When this consumer started, epoch ms. */
  readonly startedAt = Date.now();

  constructor(
    private readonly backend: LeaseStore,
    private readonly executor: TaskExecutor,
    private readonly keeper: LeaseKeeper,
    private readonly acknowledger: Acknowledger,
    private readonly settings: ConsumerSettings,
    private readonly events = new RunEvents(),
  ) {
    // Slow runs keep the floor; runs that turn slow are handed back (see `prefetch`).
    const cap = Math.max(settings.prefetch, MAX_PREFETCH);
    this.gauge = new PrefetchGauge(settings.prefetch, cap, settings.adaptivePrefetch, settings.concurrency);
    this.claimer = new Claimer(backend, settings, this, this.capacityFreed);
    this.startMarks = new StartMarks(keeper, acknowledger);
    this.deferrals = new UnchargedDeferrals(backend, this.logger);
    keeper.whenPaused((queues) => void this.handBackPaused(queues));
    keeper.whenCancelled(() => this.dropCancelled());
  }

  /** Starts consuming; resolves when the consumer ends on its own (empty queues, max tasks) or is stopped. */
  start(): Promise<ConsumerEnd> {
    this.keeper.start();
    this.loop = this.claimer.run().then((end) => (end === 'stopped' ? end : this.finish(end)));
    return this.loop;
  }

  /** Runs held right now: executing, prefetched, and finished but not yet acknowledged. */
  get held(): number {
    return this.running + this.prefetched.length + this.unacknowledged;
  }

  /**
   * Runs it may hold beyond its slots now. When runs turned slow and the
   * prefetch fell far below what waits here (claims under way when it fell
   * arrive later), the excess goes back to READY, so that it waits where
   * any free process takes it.
   */
  get prefetch(): number {
    const prefetch = this.gauge.prefetch(this.completed, this.running);
    // Only with every slot busy: runs that wait for a free slot now are no excess.
    const full = this.running >= this.settings.concurrency;
    if (full && this.prefetched.length > SHED_FACTOR * prefetch + SHED_SLACK && !this.stopping) {
      void this.handBack(this.prefetched.splice(prefetch));
    }
    return prefetch;
  }

  claimReturned(ms: number): void {
    this.gauge.claimReturned(ms);
  }

  /**
   * Drains: stops claiming, hands prefetched runs back, waits for executing
   * attempts (up to `timeoutMs`, then aborts them), and flushes acknowledgements.
   * @returns false when attempts were abandoned at the timeout or their acknowledgements could not be delivered
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    this.stopShedTimer();
    await this.claimer.stop();
    await this.loop;
    await this.releasePrefetched();
    const timer = new AbortController();
    const drained = this.attemptsEnded().then(() => true);
    const timedOut = sleep(timeoutMs, timer.signal).then(() => false);
    const clean = await Promise.race([drained, timedOut]);
    timer.abort();
    if (!clean) {
      this.logger.warn(
        `Shutdown timeout: abandoning ${this.running} running attempt(s); their leases expire and the reaper recovers them.`,
      );
      this.keeper.abortAll(new ShutdownTimeoutError());
    }
    this.startMarks.stop();
    const flushed = await this.acknowledger.flush(ACK_FLUSH_AT_STOP_MS);
    await this.keeper.stop();
    return clean && flushed;
  }

  /** Stops hard: aborts running attempts without waiting; what is left is recovered by the reaper. */
  abort(): void {
    this.stopShedTimer();
    this.keeper.abortAll(new ShutdownTimeoutError());
  }

  /**
   * Holds leased runs until a slot starts them (their leases are kept alive
   * meanwhile). `sentAt`: when the call that leased them went out, so their
   * leases are trusted no longer than Redis keeps them.
   */
  accept(runs: readonly LeasedRun[], sentAt: number): void {
    let chars = 0;
    for (const run of runs) {
      chars += run.payload.length;
      this.prefetched.push(this.keeper.hold(run, run.deadline - run.claimedAt, sentAt));
    }
    this.gauge.claimed(runs.length, chars);
    if (this.gauge.adaptive && this.shedTimer === undefined) {
      // The claimer samples the gauge when it looks for runs; one blocked in an
      // idle claim (the queues emptied into this process) does not look, so
      // while runs wait here the gauge is sampled on a timer too.
      this.shedTimer = setInterval(() => {
        if (this.prefetched.length === 0 || this.stopping) this.stopShedTimer();
        else void this.prefetch;
      }, SHED_CHECK_MS);
      this.shedTimer.unref();
    }
  }

  private stopShedTimer(): void {
    clearInterval(this.shedTimer);
    this.shedTimer = undefined;
  }

  /** Resolves once no attempt is executing. */
  private async attemptsEnded(): Promise<void> {
    while (this.running > 0) await this.attemptEnded.wait();
  }

  private async finish(end: ConsumerEnd): Promise<ConsumerEnd> {
    await this.attemptsEnded();
    await this.acknowledger.flush();
    // Runs put back by retryAfter: their calls are outcomes too.
    await this.deferrals.settled();
    return end;
  }

  /**
   * Starts prefetched runs on free slots, in claim order. A suspect (a run
   * whose previous lease expired: it may be what killed its last worker) runs
   * alone: it waits until every other attempt of this process finished, and
   * nothing starts beside it, so if it kills this process too, no innocent
   * run is blamed with it.
   */
  dispatch(): void {
    while (this.running < this.settings.concurrency && this.prefetched.length > 0 && !this.stopping) {
      if (this.suspectRunning) return;
      const suspect = (this.prefetched[0]!.run.recoveries ?? 0) > 0;
      if (suspect) {
        if (this.running > 0) return;
        this.suspectRunning = true;
      }
      this.execute(this.prefetched.shift()!, suspect);
    }
  }

  private execute(lease: Lease, suspect: boolean): void {
    // Timing costs a clock read per run: only when someone listens.
    lease.startedAt = this.events.active ? performance.now() : 0;
    if (this.tooLateToStart(lease)) {
      if (suspect) this.suspectRunning = false;
      return;
    }
    if (suspect) return this.executeSuspect(lease);
    if (lease.lapsed) return this.notStarting(lease);
    this.running++;
    lease.attempting = true;
    const attempt = this.executor.execute(lease.run, lease, this.watchers);
    // Most attempts of a fast task end right here, without a promise, and
    // need no start mark: their acknowledgement says they ran.
    if (attempt !== undefined) this.ended(lease, attempt);
    else this.startMarks.attemptStarted();
  }

  /**
   * An attempt ended: its slot is free, and its outcome goes to the
   * acknowledger, unless it timed out before (its failure went then).
   */
  private ended(lease: Lease, attempt: Attempt): void {
    lease.attempting = false;
    // (A drain waiting for the last attempt resumes in a microtask, after the push below.)
    this.freeSlot();
    if (!lease.outcomeGiven) this.acknowledge(lease, attempt);
  }

  /**
   * An attempt ran past its task's `timeoutMs`: its signal is aborted and its
   * failure acknowledged now, so the retry policy decides at once what
   * follows. Its slot stays busy until its handler returns: code that ignores
   * the signal still runs, and a slot freed now would let this process run
   * more attempts at once than its concurrency.
   */
  private readonly timedOut: AttemptEnded<Lease> = (lease, attempt) => {
    try {
      lease.outcomeGiven = true;
      // No start mark for it any more: its outcome is on its way.
      lease.attempting = false;
      const { run } = lease;
      this.logger.warn(
        `Run ${run.id} (${attempt.task}) ran past its timeoutMs: its attempt fails with TaskTimeoutError; ` +
          'its slot stays busy until the task returns (make it stop on its AbortSignal).',
      );
      this.acknowledge(lease, attempt);
    } catch (error) {
      this.broke(lease, error as Error);
    }
  };

  /** An executing attempt's slot is free; a drain waits for the last one. */
  private freeSlot(): void {
    this.running--;
    if (this.running === 0) this.attemptEnded.notify();
  }

  /**
   * An attempt whose handler returned a promise ended: the freed slot starts
   * the next run. Must not throw (the executor's `then` would reject unheard):
   * a bug here is logged and the run left to the reaper, not a wedged slot.
   */
  private readonly endedLater: AttemptEnded<Lease> = (lease, attempt) => {
    try {
      this.ended(lease, attempt);
      this.dispatch();
    } catch (error) {
      this.broke(lease, error as Error);
    }
  };

  /**
   * Runs a suspect: it first announces that it starts (so a further lease
   * expiry is blamed on it alone), which fails when its lease is gone. Its
   * start is recorded like any other's, by a start mark once it has run a
   * while: a kill between the announcement and the handler charges nothing.
   */
  private executeSuspect(lease: Lease): void {
    this.running++;
    this.startSuspect(lease).catch((error: Error) => {
      this.suspectRunning = false;
      this.freeSlot();
      this.broke(lease, error);
    });
  }

  private async startSuspect(lease: Lease): Promise<void> {
    const announced = !lease.lapsed && (await this.backend.announceStart(lease.run).catch(() => false));
    if (!announced) {
      this.suspectRunning = false;
      this.notStarting(lease);
      this.freeSlot();
      return this.dispatch();
    }
    lease.attempting = true;
    const attempt = this.executor.execute(lease.run, lease, this.suspectWatchers);
    if (attempt !== undefined) this.suspectEnded(lease, attempt);
    else this.startMarks.attemptStarted();
  }

  /** The suspect's attempt ended: other runs may start again. */
  private readonly suspectEnded: AttemptEnded<Lease> = (lease, attempt) => {
    this.suspectRunning = false;
    this.endedLater(lease, attempt);
  };

  /** Tells the run events' listeners that an attempt starts, when there are any. */
  private readonly started = (lease: Lease, task: string): void => {
    if (!this.events.active) return;
    const { run } = lease;
    this.events.started({ id: run.id, queue: run.queue, task, attempt: run.attempts });
  };

  private readonly watchers: AttemptWatchers<Lease> = {
    ended: this.endedLater,
    timedOut: this.timedOut,
    started: this.started,
  };
  private readonly suspectWatchers: AttemptWatchers<Lease> = {
    ended: this.suspectEnded,
    timedOut: this.timedOut,
    started: this.started,
  };

  /**
   * Its lease may already be gone (Redis or this process stalled while it
   * waited): starting it could run it beside another holder. It is handed
   * back if its lease still holds, else the reaper hands it back; either
   * way it never started, so it is not charged an attempt.
   */
  private notStarting(lease: Lease): void {
    if (lease.cancelled) {
      // Its run is CANCELLED and its lease gone: nothing to hand back.
      this.logger.debug(`Not starting run ${lease.run.id}: it was cancelled.`);
      this.release(lease);
      return;
    }
    this.logger.warn(`Not starting run ${lease.run.id}: its lease may have expired while it waited; handing it back.`);
    this.release(lease);
    this.backend.release([lease.run]).catch(() => undefined);
  }

  private broke(lease: Lease, error: Error): void {
    this.logger.error(`Attempt of run ${lease.run.id} broke: ${error.stack ?? error.message}`);
    this.release(lease);
  }

  private acknowledge(lease: Lease, attempt: Attempt): void {
    const { outcome } = attempt;
    lease.acknowledging = true;
    this.unacknowledged++;
    if (outcome.kind === 'retry' && outcome.uncharged) {
      // The task asked to come back later: deferred uncharged instead of acknowledged.
      this.deferrals.defer(lease.run, outcome.delayMs, (applied) => this.settled(lease, attempt, undefined, applied));
      return;
    }
    const durationMs = lease.startedAt > 0 ? performance.now() - lease.startedAt : undefined;
    this.acknowledger.push(new AttemptAcknowledgement(this, lease, attempt, durationMs));
    this.capacityFreed.notify();
  }

  /** An acknowledgement of this consumer's was applied or discarded. */
  settled(lease: Lease, { outcome, task }: Attempt, durationMs: number | undefined, applied: boolean): void {
    const { run } = lease;
    this.unacknowledged--;
    this.completed++;
    this.keeper.drop(lease);
    this.capacityFreed.notify();
    // Checked here, not only inside: the event object would be built per run for nobody.
    if (applied && this.events.active) {
      this.events.settled({
        id: run.id,
        attempt: run.attempts,
        queue: run.queue,
        task,
        outcome: outcome.kind,
        reason: outcome.kind === 'quarantine' ? outcome.reason : undefined,
        durationMs,
        source: 'worker',
      });
    }
  }

  /**
   * A run of a rate-limited queue past its start slack goes back to READY
   * unstarted and uncharged instead of starting (see `pastStartSlack`).
   */
  private tooLateToStart(lease: Lease): boolean {
    if (!pastStartSlack(lease.run)) return false;
    void this.handBack([lease]);
    this.capacityFreed.notify();
    return true;
  }

  /** Forgets a run this process will not run or acknowledge (the reaper recovers it). */
  private release(lease: Lease): void {
    this.keeper.drop(lease);
    this.capacityFreed.notify();
  }

  private async releasePrefetched(): Promise<void> {
    const released = await this.handBack(this.prefetched.splice(0));
    if (released > 0) this.logger.log(`Handed ${released} prefetched run(s) back to READY.`);
  }

  /**
   * A renewal found queues paused: the runs held there unstarted (claimed
   * before the pause) go back to READY, uncharged, so that nothing of a
   * paused queue starts later than one renewal round after the pause.
   */
  private async handBackPaused(queues: ReadonlySet<string>): Promise<void> {
    const held: Lease[] = [];
    let kept = 0;
    for (const lease of this.prefetched) {
      if (queues.has(lease.run.queue)) held.push(lease);
      else this.prefetched[kept++] = lease;
    }
    this.prefetched.length = kept;
    const released = await this.handBack(held);
    if (released > 0) this.logger.log(`Handed ${released} prefetched run(s) of paused queues back to READY.`);
  }

  /**
   * A renewal found runs cancelled: those held here unstarted leave the
   * prefetch at once (their leases are gone, nothing to hand back), so they
   * neither start nor take the room of runs that may.
   */
  private dropCancelled(): void {
    let kept = 0;
    let dropped = 0;
    for (const lease of this.prefetched) {
      if (lease.cancelled) dropped++;
      else this.prefetched[kept++] = lease;
    }
    this.prefetched.length = kept;
    if (dropped === 0) return;
    this.logger.log(`Dropped ${dropped} prefetched run(s) that were cancelled.`);
    this.capacityFreed.notify();
  }

  /** Hands leased runs this process has not started back to READY, uncharged; how many went back. */
  private async handBack(leases: readonly Lease[]): Promise<number> {
    if (leases.length === 0) return 0;
    for (const lease of leases) this.keeper.drop(lease);
    const runs = leases.map(({ run }) => run);
    try {
      return (await this.backend.release(runs)).filter(Boolean).length;
    } catch (error) {
      this.logger.warn(
        `Could not hand ${runs.length} prefetched run(s) back (${(error as Error).message}); the reaper recovers them when their lease expires.`,
      );
      return 0;
    }
  }
}
