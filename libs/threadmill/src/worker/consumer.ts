import { Logger } from '@nestjs/common';
import type { LeasedRun, TaskBackend, WorkSignal } from '../backend/task-backend.js';
import { ThreadmillError } from '../errors/threadmill.error.js';
import type { Acknowledger } from './acknowledger.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { Notifier, sleep } from './notifier.js';
import type { TaskExecutor } from './task-executor.js';

/** How one consumer works; derived from the worker options. */
export interface ConsumerSettings {
  readonly queues: readonly string[];
  /** Attempts running at once. */
  readonly concurrency: number;
  /** Runs held beyond free slots, so a slot that frees up starts the next run without a round trip. */
  readonly prefetch: number;
  /** Most runs per claim. */
  readonly batchSize: number;
  readonly workerId: string;
  /** Stop once the queues hold no ready, deferred or running run. */
  readonly exitWhenEmpty: boolean;
  /** Stop claiming after this many runs (0: never), so the process can be recycled. */
  readonly maxTasks: number;
}

/** Why a consumer stopped on its own. */
export type ConsumerEnd = 'empty' | 'max-tasks' | 'stopped' | 'crashed';

/** How long an idle consumer blocks before it re-issues its blocked wait. */
const IDLE_BLOCK_MS = 10_000;
/** How long a stopping consumer keeps trying to deliver its last acknowledgements. */
const ACK_FLUSH_AT_STOP_MS = 10_000;
/** How often an `exitWhenEmpty` consumer re-checks queues that only hold deferred or running runs. */
const EMPTY_RECHECK_MS = 250;

class ShutdownTimeoutError extends ThreadmillError {
  constructor() {
    super('The worker is stopping hard (shutdown timeout or second signal); abandon the attempt.');
  }
}

/**
 * The claim loop of one worker process: claims runs as slots free up (up to
 * free slots + prefetch, at most a batch per call), runs them on `concurrency`
 * async slots, and blocks on Redis when idle. `stop()` drains: no new claims,
 * prefetched runs handed back to READY at once, running ones finished and
 * acknowledged.
 */
export class Consumer {
  private readonly logger = new Logger('Threadmill');
  private readonly slotFreed = new Notifier();
  private readonly stopSignal = new AbortController();
  private readonly prefetched: { run: LeasedRun; signal: AbortSignal }[] = [];
  private readonly running = new Set<Promise<void>>();
  private signal: WorkSignal | undefined;
  /** A suspect run is executing: nothing else may start beside it. */
  private suspectRunning = false;
  private loop: Promise<ConsumerEnd> | undefined;
  private rotation = Math.floor(Math.random() * 1024);
  private started = 0;
  /** Runs this consumer finished (acknowledged), whatever their outcome. */
  completed = 0;
  /** When this consumer started, epoch ms. */
  readonly startedAt = Date.now();

  constructor(
    private readonly backend: TaskBackend,
    private readonly executor: TaskExecutor,
    private readonly keeper: LeaseKeeper,
    private readonly acknowledger: Acknowledger,
    private readonly settings: ConsumerSettings,
  ) {}

  /** Starts consuming; resolves when the consumer ends on its own (empty queues, max tasks) or is stopped. */
  start(): Promise<ConsumerEnd> {
    this.signal = this.backend.workSignal(this.settings.queues);
    this.keeper.start();
    this.loop = this.claimLoop();
    return this.loop;
  }

  /** Runs held right now: running plus prefetched. */
  get held(): number {
    return this.running.size + this.prefetched.length;
  }

  /**
   * Drains: stops claiming, hands prefetched runs back, waits for running
   * attempts (up to `timeoutMs`, then aborts them), and flushes acknowledgements.
   * @returns false when running attempts had to be abandoned at the timeout
   */
  async stop(timeoutMs: number): Promise<boolean> {
    if (!this.stopSignal.signal.aborted) this.stopSignal.abort();
    this.slotFreed.notify();
    await this.signal?.close();
    await this.loop;
    await this.releasePrefetched();
    const timer = new AbortController();
    const drained = Promise.all(this.running).then(() => true);
    const timedOut = sleep(timeoutMs, timer.signal).then(() => false);
    const clean = await Promise.race([drained, timedOut]);
    timer.abort();
    if (!clean) {
      this.logger.warn(
        `Shutdown timeout: abandoning ${this.running.size} running attempt(s); their leases expire and the reaper recovers them.`,
      );
      this.keeper.abortAll(new ShutdownTimeoutError());
    }
    const flushed = await this.acknowledger.flush(ACK_FLUSH_AT_STOP_MS);
    await this.keeper.stop();
    return clean && flushed;
  }

  /** Stops hard: aborts running attempts without waiting; what is left is recovered by the reaper. */
  abort(): void {
    this.keeper.abortAll(new ShutdownTimeoutError());
  }

  private get stopping(): boolean {
    return this.stopSignal.signal.aborted;
  }

  private async claimLoop(): Promise<ConsumerEnd> {
    const { concurrency, prefetch, batchSize, maxTasks } = this.settings;
    let failures = 0;
    while (!this.stopping) {
      if (maxTasks > 0 && this.started + this.prefetched.length >= maxTasks) return this.finish('max-tasks');
      const budget = maxTasks > 0 ? maxTasks - this.started - this.prefetched.length : Infinity;
      const want = Math.min(concurrency - this.running.size + prefetch - this.prefetched.length, batchSize, budget);
      if (want <= 0) {
        await this.slotFreed.wait();
        continue;
      }
      let runs: LeasedRun[];
      const sentAt = Date.now();
      try {
        runs = await this.backend.claim(this.settings.queues, want, this.settings.workerId, this.rotation++);
        failures = 0;
      } catch (error) {
        const delay = Math.min(100 * 2 ** failures++, 2_000);
        this.logger.warn(`Claim failed, retrying in ${delay} ms: ${(error as Error).message}`);
        await sleep(delay, this.stopSignal.signal);
        continue;
      }
      // Prefetched runs are leased too: keep their leases alive until they start.
      for (const run of runs) {
        this.prefetched.push({ run, signal: this.keeper.hold(run, run.deadline - run.claimedAt, sentAt) });
      }
      this.dispatch();
      if (runs.length === want) continue;
      // The queues are out of ready runs: wait for a wake-up from Redis.
      if (this.settings.exitWhenEmpty && this.held === 0 && (await this.queuesEmpty())) return this.finish('empty');
      await this.waitForWork(this.settings.exitWhenEmpty ? EMPTY_RECHECK_MS : IDLE_BLOCK_MS);
    }
    return 'stopped';
  }

  private async waitForWork(timeoutMs: number): Promise<void> {
    try {
      await this.signal!.wait(timeoutMs);
    } catch (error) {
      if (!this.stopping) {
        this.logger.warn(`Waiting for work failed, retrying: ${(error as Error).message}`);
        await sleep(200, this.stopSignal.signal);
      }
    }
  }

  private async queuesEmpty(): Promise<boolean> {
    const counts = await this.backend.counts(this.settings.queues);
    return counts.every((c) => c.ready + c.deferred + c.running === 0);
  }

  private async finish(end: ConsumerEnd): Promise<ConsumerEnd> {
    await Promise.all(this.running);
    await this.acknowledger.flush();
    return end;
  }

  /**
   * Starts prefetched runs on free slots, in claim order. A suspect (a run
   * whose previous lease expired: it may be what killed its last worker) runs
   * alone: it waits until every other attempt of this process finished, and
   * nothing starts beside it, so if it kills this process too, no innocent
   * run is blamed with it.
   */
  private dispatch(): void {
    while (this.running.size < this.settings.concurrency && this.prefetched.length > 0 && !this.stopping) {
      if (this.suspectRunning) return;
      if ((this.prefetched[0]!.run.recoveries ?? 0) > 0) {
        if (this.running.size > 0) return;
        this.suspectRunning = true;
      }
      this.execute(this.prefetched.shift()!);
    }
  }

  private execute({ run, signal }: { run: LeasedRun; signal: AbortSignal }): void {
    this.started++;
    const suspect = (run.recoveries ?? 0) > 0;
    const attempt = this.attempt(run, signal, suspect).finally(() => {
      this.keeper.drop(run.id);
      this.running.delete(attempt);
      if (suspect) this.suspectRunning = false;
      this.slotFreed.notify();
      this.dispatch();
    });
    this.running.add(attempt);
  }

  private async attempt(run: LeasedRun, signal: AbortSignal, suspect: boolean): Promise<void> {
    // Its lease may already be gone (Redis or this process stalled while it
    // waited): starting it would run it beside the attempt the reaper hands
    // out. Leave it to the reaper.
    const lapsed = this.keeper.lapsed(run.id) || (suspect && !(await this.backend.markStarted(run).catch(() => false)));
    if (lapsed) {
      this.logger.warn(
        `Not starting run ${run.id}: its lease may have expired while it waited; the reaper recovers it.`,
      );
      return;
    }
    const outcome = await this.executor.execute(run, signal);
    await this.acknowledger.push({ id: run.id, queue: run.queue, token: run.token, outcome });
    this.completed++;
  }

  private async releasePrefetched(): Promise<void> {
    const runs = this.prefetched.splice(0).map(({ run }) => run);
    if (runs.length === 0) return;
    for (const run of runs) this.keeper.drop(run.id);
    try {
      const released = await this.backend.release(runs);
      this.logger.log(`Handed ${released.filter(Boolean).length} prefetched run(s) back to READY.`);
    } catch (error) {
      this.logger.warn(
        `Could not hand ${runs.length} prefetched run(s) back (${(error as Error).message}); the reaper recovers them when their lease expires.`,
      );
    }
  }
}
