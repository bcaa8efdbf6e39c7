import { RetryNotice } from './retry-notice.js';
import type { LeaseStore } from '../backend/backend-roles.js';
import { Logger } from '@nestjs/common';
import type { LeasedRun, RenewedLease, WorkerHeartbeat } from '../backend/task-backend.js';
import { CancelledError } from '../errors/cancelled.error.js';
import { LeaseLostError } from '../errors/lease-lost.error.js';
import { RunEvents, type StaleReason } from '../events/run-events.js';

/**
 * A lease this process holds. Its abort signal is created only when an
 * attempt asks for it (most tasks never do): one AbortController per run
 * would be the most expensive allocation of the hot path.
 */
export class Lease {
  private controller: AbortController | undefined;
  private reason: Error | undefined;
  /** When its attempt started (`performance.now()`), or 0 when nobody times attempts. */
  startedAt = 0;
  /** Its neighbours in its keeper's list while held (see {@link LeaseKeeper}); only the keeper writes them. */
  previous: Lease | undefined = undefined;
  next: Lease | undefined = undefined;
  /** Whether its keeper still holds it: false once acknowledged, released or found lost. */
  held = false;
  /** Whether its attempt is executing (a start mark is sent only for one still executing). */
  attempting = false;
  /** Whether its attempt was seen executing by a look of {@link StartMarks}. */
  seenExecuting = false;
  /** Whether its attempt's start was sent to be recorded. */
  startSent = false;
  /**
   * Whether its attempt's outcome went out before its handler returned (it
   * timed out): what the handler does afterwards is discarded.
   */
  outcomeGiven = false;
  /**
   * Whether its attempt's outcome is on its way to Redis: the lease is kept
   * (and renewed) until the outcome lands, which ends it.
   */
  acknowledging = false;

  constructor(
    readonly run: LeasedRun,
    readonly leaseTtlMs: number,
    /**
     * When the lease surely still holds, by the monotonic clock: the time its
     * claim or latest renewal was *sent*, plus its TTL. Redis set the real
     * deadline later than that, so this errs on the safe side.
     */
    public validUntil: number,
  ) {}

  /** Whether its run was cancelled (a renewal found its lease revoked by a cancel). */
  get cancelled(): boolean {
    return this.reason instanceof CancelledError;
  }

  /**
   * Why an outcome under this lease was discarded as stale (asked only then).
   * A renewal may have said the run was cancelled; otherwise a lease that
   * still held by this process's cautious clock (Redis keeps it at least that
   * long) can only have been revoked: by a cancel since the last renewal, the
   * common case for a short attempt, or a purge. One past that clock, or
   * found lost, expired.
   */
  get staleReason(): StaleReason {
    if (this.cancelled) return 'revoked';
    return this.reason instanceof LeaseLostError || performance.now() >= this.validUntil ? 'expired' : 'revoked';
  }

  /** Aborted when the lease is lost, its run is cancelled, or the worker stops hard. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /**
   * Whether the lease may have run out (or was found lost): its attempt must
   * not start, or it would run while the reaper hands the run to another
   * worker (a Redis stall or a frozen process can outlast a lease).
   */
  get lapsed(): boolean {
    return this.reason !== undefined || performance.now() >= this.validUntil;
  }

  abort(reason: Error): void {
    this.reason ??= reason;
    this.controller?.abort(reason);
  }
}

/**
 * Keeps the leases of one worker process alive: one timer renews every held
 * lease in one token-fenced script call (one per partition of a partitioned
 * backend), so the lease TTL can be short (a killed worker's runs come back
 * in seconds) while a long task keeps its lease. A lease found lost aborts
 * its attempt's AbortSignal (with `LeaseLostError`, or `CancelledError` when
 * a cancel revoked it). A renewal that failed leaves every lease its last
 * known deadline (`validUntil`); a partition that did not answer leaves its
 * own leases theirs, and the others' are renewed.
 *
 * The same call refreshes the process's own record (its heartbeat), which
 * expires three ticks after the process stops renewing it.
 *
 * Held leases form a doubly linked list through the leases themselves, not a
 * `Map` keyed by run id. A worker holds and drops thousands a second. Each
 * `Map` table it outgrew kept a pointer to its successor, and the tables
 * pinned their entries: once one table sat dead in the old generation, every
 * later table, lease, run and claim reply survived each scavenge. Those
 * objects were copied, then promoted, until the next full collection (see
 * docs/optimisations.md, step 30). A dropped lease's links are cleared, so a
 * dead lease points at nothing younger than itself.
 */
export class LeaseKeeper {
  private first: Lease | undefined;
  private last: Lease | undefined;
  private count = 0;
  private readonly logger = new Logger('Threadmill');
  private readonly renewalNotice = new RetryNotice('Lease renewal', this.logger);
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private pausedListener: ((queues: ReadonlySet<string>) => void) | undefined;
  private cancelledListener: (() => void) | undefined;

  /**
   * @param intervalMs time between renewals: a third of the shortest lease, so
   * two renewals can fail before a lease lapses
   */
  constructor(
    private readonly backend: LeaseStore,
    private readonly intervalMs: number,
    private readonly heartbeat: () => WorkerHeartbeat,
    private readonly events = new RunEvents(),
  ) {}

  /**
   * Starts keeping `run`'s lease.
   * @param sentAt when the claim was sent (`performance.now()`: a wall clock set back or forward moves no lease)
   */
  hold(run: LeasedRun, leaseTtlMs: number, sentAt: number): Lease {
    const lease = new Lease(run, leaseTtlMs, sentAt + leaseTtlMs);
    lease.held = true;
    lease.previous = this.last;
    if (this.last) this.last.next = lease;
    else this.first = lease;
    this.last = lease;
    this.count++;
    return lease;
  }

  /** Stops keeping `lease` (acknowledged or released); dropping it twice is harmless. */
  drop(lease: Lease): void {
    if (!lease.held) return;
    const { previous, next } = lease;
    if (previous) previous.next = next;
    else this.first = next;
    if (next) next.previous = previous;
    else this.last = previous;
    lease.previous = lease.next = undefined;
    lease.held = false;
    this.count--;
  }

  /** Aborts every held attempt with `reason` (a hard stop). */
  abortAll(reason: Error): void {
    for (const lease of this.leases()) lease.abort(reason);
  }

  get size(): number {
    return this.count;
  }

  /**
   * One look at the executing attempts (see `StartMarks`): the runs whose
   * attempt was executing at the previous look too and whose start was not
   * sent yet (now marked sent), and whether any attempt executes.
   */
  longRunningStarts(): { runs: LeasedRun[]; executing: boolean } {
    const runs: LeasedRun[] = [];
    let executing = false;
    for (let lease = this.first; lease; lease = lease.next) {
      if (!lease.attempting) continue;
      executing = true;
      if (lease.startSent) continue;
      if (lease.seenExecuting) {
        lease.startSent = true;
        runs.push(lease.run);
      } else {
        lease.seenExecuting = true;
      }
    }
    return { runs, executing };
  }

  /** The held leases, oldest first. */
  private leases(): Lease[] {
    const leases: Lease[] = [];
    for (let lease = this.first; lease; lease = lease.next) leases.push(lease);
    return leases;
  }

  start(): void {
    if (this.timer) return;
    this.tick();
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  private tick(): void {
    this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
  }

  /** Stops renewing and removes the worker's record. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.renewing;
    await this.backend.retire(this.heartbeat().id).catch((error: Error) => {
      this.logger.warn(`Could not remove the worker record (it expires by itself): ${error.message}`);
    });
  }

  private async renew(): Promise<void> {
    const leases = this.leases();
    const sentAt = performance.now();
    let kept: RenewedLease[];
    try {
      kept = await this.backend.renew(
        this.heartbeat(),
        this.intervalMs * 3,
        leases.map(({ run, leaseTtlMs }) => ({ id: run.id, queue: run.queue, token: run.token, leaseTtlMs })),
        // One partition's master away must not hold back the others' next
        // renewal: its leases go unanswered before the next tick is due.
        this.intervalMs * 0.8,
      );
    } catch (error) {
      // Redis is unreachable: the leases may still be valid, so keep the
      // attempts running and try again at the next tick.
      this.renewalNotice.failed(error, 'at the next renewal');
      return;
    }
    this.renewalNotice.succeeded();
    let lost = 0;
    let unanswered = 0;
    let cancelled = false;
    let paused: Set<string> | undefined;
    kept.forEach((state, i) => {
      const lease = leases[i]!;
      if (state === 'paused') (paused ??= new Set()).add(lease.run.queue);
      if (state === 'held' || state === 'paused') {
        lease.validUntil = sentAt + lease.leaseTtlMs;
        return;
      }
      if (state === 'unanswered') {
        // Its partition's master is away (the backend logged it): as after a
        // failed renewal, the lease keeps its last known deadline.
        unanswered++;
        return;
      }
      // Its outcome may have landed already (which ended the lease), or will
      // be discarded as stale when it does: there is no attempt left to stop.
      if (!lease.held || lease.acknowledging) return;
      lost++;
      this.drop(lease);
      if (state === 'cancelled') {
        // An operator's decision, not a fault: its attempt (or a prefetched
        // run that has not started) stops, and its outcome is discarded. An
        // expected outcome, at debug level: its discarded acknowledgement is
        // counted and summarised once a minute (StaleAcknowledgementSummary).
        this.logger.debug(`Run ${lease.run.id} was cancelled; aborting its attempt (its outcome will be discarded).`);
        lease.abort(new CancelledError(lease.run.id));
        cancelled = true;
        return;
      }
      this.logger.warn(`Lost the lease of run ${lease.run.id}; aborting its attempt (its outcome will be discarded).`);
      lease.abort(new LeaseLostError(lease.run.id));
    });
    if (leases.length > 0) this.events.leasesRenewed(kept.length - lost - unanswered, lost);
    if (paused) this.pausedListener?.(paused);
    if (cancelled) this.cancelledListener?.();
  }

  /** Tells `listener` after each renewal round that found runs cancelled (their leases aborted and dropped). */
  whenCancelled(listener: () => void): void {
    this.cancelledListener = listener;
  }

  /**
   * Tells `listener` of the queues found paused in each renewal round that
   * held leases of theirs, so that runs held there unstarted go back.
   */
  whenPaused(listener: (queues: ReadonlySet<string>) => void): void {
    this.pausedListener = listener;
  }
}
