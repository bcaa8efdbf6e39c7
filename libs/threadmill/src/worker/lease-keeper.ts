import { Logger } from '@nestjs/common';
import type { LeasedRun, TaskBackend, WorkerHeartbeat } from '../backend/task-backend.js';
import { LeaseLostError } from '../errors/lease-lost.error.js';
import { RunEvents } from '../events/run-events.js';

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

  constructor(
    readonly run: LeasedRun,
    readonly leaseTtlMs: number,
    /**
     * When the lease surely still holds, by the local clock: the time its
     * claim or latest renewal was *sent*, plus its TTL. Redis set the real
     * deadline later than that, so this errs on the safe side.
     */
    public validUntil: number,
  ) {}

  /** Aborted when the lease is lost or the worker stops hard. */
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
    return this.reason !== undefined || Date.now() >= this.validUntil;
  }

  abort(reason: Error): void {
    this.reason ??= reason;
    this.controller?.abort(reason);
  }
}

/**
 * Keeps the leases of one worker process alive: one timer renews every held
 * lease in one token-fenced script call, so the lease TTL can be short (a
 * killed worker's runs come back in seconds) while a long task keeps its
 * lease. A lease found lost aborts its attempt's AbortSignal.
 *
 * The same call refreshes the process's own record (its heartbeat), which
 * expires three ticks after the process stops renewing it.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, Lease>();
  private readonly logger = new Logger('Threadmill');
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  /**
   * @param intervalMs time between renewals: a third of the shortest lease, so
   * two renewals can fail before a lease lapses
   */
  constructor(
    private readonly backend: TaskBackend,
    private readonly intervalMs: number,
    private readonly heartbeat: () => WorkerHeartbeat,
    private readonly events = new RunEvents(),
  ) {}

  /**
   * Starts keeping `run`'s lease.
   * @param sentAt local time the claim was sent
   */
  hold(run: LeasedRun, leaseTtlMs: number, sentAt: number): Lease {
    const lease = new Lease(run, leaseTtlMs, sentAt + leaseTtlMs);
    this.held.set(run.id, lease);
    return lease;
  }

  /** Stops keeping the lease of run `id` (acknowledged or released). */
  drop(id: string): void {
    this.held.delete(id);
  }

  /** Aborts every held attempt with `reason` (a hard stop). */
  abortAll(reason: Error): void {
    for (const lease of this.held.values()) lease.abort(reason);
  }

  get size(): number {
    return this.held.size;
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
    const leases = [...this.held.values()];
    const sentAt = Date.now();
    let kept: boolean[];
    try {
      kept = await this.backend.renew(
        this.heartbeat(),
        this.intervalMs * 3,
        leases.map(({ run, leaseTtlMs }) => ({ id: run.id, queue: run.queue, token: run.token, leaseTtlMs })),
      );
    } catch (error) {
      // Redis is unreachable: the leases may still be valid, so keep the
      // attempts running and try again at the next tick.
      this.logger.warn(`Lease renewal failed, retrying: ${(error as Error).message}`);
      return;
    }
    let lost = 0;
    kept.forEach((ok, i) => {
      const lease = leases[i]!;
      if (ok) lease.validUntil = sentAt + lease.leaseTtlMs;
      if (ok || this.held.get(lease.run.id) !== lease) return;
      lost++;
      this.logger.warn(`Lost the lease of run ${lease.run.id}; aborting its attempt (its outcome will be discarded).`);
      this.held.delete(lease.run.id);
      lease.abort(new LeaseLostError(lease.run.id));
    });
    if (leases.length > 0) this.events.leasesRenewed(kept.filter(Boolean).length, lost);
  }
}
