import { RetryNotice } from './retry-notice.js';
import type { LeaseStore } from '../backend/backend-roles.js';
import { Logger } from '@nestjs/common';
import type { ClaimWaiter, LeasedRun } from '../backend/task-backend.js';
import { claimSize } from './claim-size.js';
import type { ConsumerSettings } from './consumer-settings.js';
import { Notifier, sleep } from './notifier.js';

/** How often an `exitWhenEmpty` consumer re-checks queues that only hold deferred or running runs. */
const EMPTY_RECHECK_MS = 250;

/** What the claimer serves: the consumer's holdings and where leased runs go. */
export interface ClaimSink {
  /** Runs held: executing, prefetched, and finished but not yet acknowledged. */
  readonly held: number;
  /** Runs it may hold beyond its slots now. */
  readonly prefetch: number;
  /** A claim came back after `ms` (for sizing the prefetch). */
  claimReturned(ms: number): void;
  /** Takes the runs a claim leased; `sentAt` is when the claim went out (`performance.now()`). */
  accept(runs: readonly LeasedRun[], sentAt: number): void;
  /** Starts what it holds on its free slots (called once the next claim, if any, went out). */
  dispatch(): void;
}

/** Why claiming ended on its own, or that it was stopped. */
export type ClaimEnd = 'empty' | 'max-tasks' | 'stopped';

/**
 * The claiming half of a consumer. While its queues have ready runs it
 * claims as slots free up: a worthwhile share of its capacity per claim, and
 * a second claim in flight behind a backlog, so that Redis leases the next
 * batch while the process runs this one. When a claim comes back short it
 * sends a blocking claim (see {@link ClaimWaiter}), which Redis runs the
 * moment a run is enqueued; a busy consumer sends none until a slot frees.
 */
export class Claimer {
  private readonly logger = new Logger('Threadmill');
  private readonly waitNotice = new RetryNotice('Waiting for work', this.logger);
  private readonly claimNotice = new RetryNotice('Claim', this.logger);
  private readonly waiter: ClaimWaiter;
  private readonly stopSignal = new AbortController();
  private stopped = false;
  private loop: Promise<ClaimEnd> | undefined;
  /**
   * Where the next claim starts its rotation over the queues: where the
   * last one to return stopped (a claim sent while another is in flight
   * starts where that one did). Random at first, so that the consumers of
   * a pool do not all start at the same queue.
   */
  private rotation = Math.floor(Math.random() * 1024);
  /** Runs claimed since the consumer started (for `maxTasks`). */
  claimed = 0;
  /** A blocking claim is under way. */
  private blocking = false;
  /** Claims under way, and the capacity they reserve. */
  private readonly claims = new Set<Promise<void>>();
  private inFlight = 0;
  private reserved = 0;
  /** A claim came back short: the queues are out of ready runs. */
  private exhausted = false;
  /** The last claim came back full: there is a backlog worth a second claim in flight. */
  private backlog = false;
  /** Claims that failed in a row. */
  private failures = 0;

  /** @param capacityFreed notified by the consumer whenever a run it held is let go */
  constructor(
    private readonly backend: LeaseStore,
    private readonly settings: ConsumerSettings,
    private readonly sink: ClaimSink,
    private readonly capacityFreed: Notifier,
  ) {
    this.waiter = backend.claimWaiter(settings.queues, settings.workerId);
  }

  /** Claims until the queues are empty (`exitWhenEmpty`), `maxTasks` is reached, or {@link stop}. */
  run(): Promise<ClaimEnd> {
    this.loop ??= this.claimLoop();
    return this.loop;
  }

  /** Stops claiming: ends a blocking claim at once and waits for the claims under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (!this.stopSignal.signal.aborted) this.stopSignal.abort();
    this.capacityFreed.notify();
    // Its claim still runs and returns; the stopping consumer hands its runs back.
    if (this.blocking) await this.waiter.interrupt().catch(() => undefined);
    await this.loop;
    await this.waiter.close();
  }

  private async claimLoop(): Promise<ClaimEnd> {
    const { maxTasks, exitWhenEmpty } = this.settings;
    while (!this.stopped) {
      if (maxTasks > 0 && this.claimed >= maxTasks) return 'max-tasks';
      if (this.exhausted && this.inFlight === 0) {
        if (exitWhenEmpty && this.sink.held === 0 && (await this.queuesEmpty())) return 'empty';
        // The queues are out of ready runs: a blocking claim, once a slot is
        // free, of what can start at once (the rest follows behind a backlog):
        // a consumer whose host vanished without closing its connection may
        // still take one such claim before Redis notices (docs/storage.md).
        const want = Math.min(this.freeCapacity(), this.settings.concurrency);
        if (want <= 0) await this.capacityFreed.wait();
        else await this.claimWhenReady(want, this.idleWaitMs());
        continue;
      }
      const want = this.exhausted ? 0 : this.wanted();
      if (want <= 0) {
        await this.capacityFreed.wait();
        continue;
      }
      this.launch(want);
      if (this.failures > 0) await sleep(this.backoffMs(), this.stopSignal.signal);
    }
    await Promise.all(this.claims);
    return 'stopped';
  }

  private wanted(): number {
    const { inFlight, reserved, claimed, backlog } = this;
    const { held, prefetch } = this.sink;
    return claimSize(this.settings, { inFlight, held, reserved, claimed, backlog, prefetch });
  }

  /** Runs the consumer could take now: free capacity, up to a batch (and `maxTasks`). */
  private freeCapacity(): number {
    const { concurrency, batchSize, maxTasks } = this.settings;
    let want = Math.min(concurrency + this.sink.prefetch - this.sink.held, batchSize);
    if (maxTasks > 0) want = Math.min(want, maxTasks - this.claimed);
    return want;
  }

  /** How long a blocking claim may wait: never longer than a lease is trusted for (see `idleWaitMs`). */
  private idleWaitMs(): number {
    const { exitWhenEmpty, idleWaitMs } = this.settings;
    return exitWhenEmpty ? Math.min(EMPTY_RECHECK_MS, idleWaitMs) : idleWaitMs;
  }

  private backoffMs(): number {
    return Math.min(100 * 2 ** (this.failures - 1), 1_000);
  }

  /** Waits for ready runs with a blocking claim of `want`; its runs go to the sink when it returns. */
  private async claimWhenReady(want: number, timeoutMs: number): Promise<void> {
    this.inFlight++;
    this.reserved += want;
    this.blocking = true;
    const sentAt = performance.now();
    try {
      const runs = await this.waiter.claim(want, this.rotation, timeoutMs);
      this.rotation = runs.next;
      this.claimed += runs.length;
      this.failures = 0;
      this.waitNotice.succeeded();
      this.sink.accept(runs, sentAt);
      this.exhausted = runs.length < want;
      this.backlog = runs.length === want;
    } catch (error) {
      this.failures++;
      if (!this.stopped) {
        const backoffMs = this.backoffMs();
        this.waitNotice.failed(error, `in ${backoffMs} ms`);
        await sleep(backoffMs, this.stopSignal.signal);
      }
    } finally {
      this.blocking = false;
      this.inFlight--;
      this.reserved -= want;
      this.sink.dispatch();
      this.capacityFreed.notify();
    }
  }

  /** Sends a claim for `want` runs; its runs go to the sink when it returns. */
  private launch(want: number): void {
    this.inFlight++;
    this.reserved += want;
    const sentAt = performance.now();
    const started = performance.now();
    const claim: Promise<void> = this.backend
      .claim(this.settings.queues, want, this.settings.workerId, this.rotation)
      .then(
        (runs) => {
          this.rotation = runs.next;
          this.sink.claimReturned(performance.now() - started);
          this.claimed += runs.length;
          this.failures = 0;
          this.claimNotice.succeeded();
          this.sink.accept(runs, sentAt);
          if (runs.length < want) this.exhausted = true;
          this.backlog = runs.length === want;
        },
        (error: Error) => {
          this.failures++;
          this.claimNotice.failed(error, 'at the next claim');
        },
      )
      .finally(() => {
        this.inFlight--;
        this.reserved -= want;
        this.claims.delete(claim);
        // Behind a backlog, the next claim goes out before these runs start:
        // Redis leases the next batch while this process runs this one,
        // instead of each waiting for the other.
        if (this.backlog && !this.exhausted && !this.stopped) {
          const next = this.wanted();
          if (next > 0) this.launch(next);
        }
        this.sink.dispatch();
        this.capacityFreed.notify();
      });
    this.claims.add(claim);
  }

  private async queuesEmpty(): Promise<boolean> {
    const counts = await this.backend.counts(this.settings.queues);
    return counts.every((c) => c.ready + c.deferred + c.running === 0);
  }
}
