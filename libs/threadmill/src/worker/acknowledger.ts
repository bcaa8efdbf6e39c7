import { Logger } from '@nestjs/common';
import type { Acknowledgement, TaskBackend } from '../backend/task-backend.js';
import { sleep } from './notifier.js';

interface Pending {
  readonly ack: Acknowledgement;
  readonly settle: (applied: boolean) => void;
}

/**
 * Batches acknowledgements: an outcome waits at most `flushMs` (or until
 * `batchSize` are pending) and then goes to Redis with the others in one
 * script call. An acknowledgement is never dropped: while Redis is away the
 * batch is retried; if the process dies first, the lease expires and the
 * reaper recovers the run (at-least-once).
 */
export class Acknowledger {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** Acknowledgements of the batch being sent. */
  private inFlight = 0;
  private readonly logger = new Logger('Threadmill');
  /** Acknowledgements Redis discarded because their lease had expired. */
  staleCount = 0;

  constructor(
    private readonly backend: TaskBackend,
    private readonly batchSize: number,
    private readonly flushMs: number,
  ) {}

  /** Queues `ack`; resolves true once applied, false if it was stale and discarded. */
  push(ack: Acknowledgement): Promise<boolean> {
    return new Promise((settle) => {
      this.pending.push({ ack, settle });
      if (this.pending.length >= this.batchSize) this.kick();
      else this.timer ??= setTimeout(() => this.kick(), this.flushMs);
    });
  }

  get size(): number {
    return this.pending.length;
  }

  /**
   * Sends everything pending now and resolves true once Redis applied it. With
   * `timeoutMs`, resolves false when that passes first (Redis is away): a
   * stopping worker must not hang, and acknowledgements that never arrive
   * leave their runs to the reaper, which recovers them after their lease.
   */
  async flush(timeoutMs?: number): Promise<boolean> {
    const drained = (async () => {
      while (this.pending.length > 0 || this.flushing) {
        this.kick();
        await this.flushing;
      }
      return true;
    })();
    if (timeoutMs === undefined) return drained;
    const timer = new AbortController();
    const flushed = await Promise.race([drained, sleep(timeoutMs, timer.signal).then(() => false)]);
    timer.abort();
    if (!flushed) {
      this.logger.warn(
        `Gave up flushing ${this.pending.length + this.inFlight} acknowledgement(s) after ${timeoutMs} ms; ` +
          'the reaper recovers their runs when their lease expires.',
      );
    }
    return flushed;
  }

  private kick(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing ??= this.send().finally(() => {
      this.flushing = undefined;
      if (this.pending.length > 0) this.timer ??= setTimeout(() => this.kick(), this.flushMs);
    });
  }

  private async send(): Promise<void> {
    const batch = this.pending.splice(0, this.batchSize);
    this.inFlight = batch.length;
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await this.backend.acknowledge(batch.map((p) => p.ack));
        const stale = applied.filter((ok) => !ok).length;
        if (stale > 0) {
          this.staleCount += stale;
          this.logger.warn(
            `Discarded ${stale} stale acknowledgement(s): their lease expired before the outcome arrived.`,
          );
        }
        batch.forEach((p, i) => p.settle(applied[i]!));
        this.inFlight = 0;
        return;
      } catch (error) {
        const delay = Math.min(50 * 2 ** attempt, 2_000);
        this.logger.warn(
          `Acknowledging ${batch.length} run(s) failed, retrying in ${delay} ms: ${(error as Error).message}`,
        );
        await sleep(delay);
      }
    }
  }
}
