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

  /** Sends everything pending now and resolves when Redis applied it. */
  async flush(): Promise<void> {
    while (this.pending.length > 0 || this.flushing) {
      this.kick();
      await this.flushing;
    }
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
