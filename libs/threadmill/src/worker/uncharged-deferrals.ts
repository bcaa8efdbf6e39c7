import type { LeaseStore } from '../backend/backend-roles.js';
import type { Logger } from '@nestjs/common';
import type { LeasedRun } from '../backend/task-backend.js';

/**
 * Whether a run of a rate-limited queue is past its start slack: its claim
 * counted it in the queue's window then, so starting it now could start it in
 * a window the limit already filled (docs/rate-limits.md). Its backend gave
 * the latest moment on this process's monotonic clock (`startBy`), so no wall
 * clock is compared with Redis's.
 */
export function pastStartSlack(run: LeasedRun, now = performance.now()): boolean {
  return run.startBy !== undefined && now > run.startBy;
}

/**
 * The calls that put runs back uncharged for a consumer (`context.retryAfter`,
 * `TaskBackend.defer`): each instead of the attempt's acknowledgement. A
 * stopping consumer waits for them as for its acknowledgements.
 */
export class UnchargedDeferrals {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly backend: LeaseStore,
    private readonly logger: Logger,
  ) {}

  /**
   * Defers `run` by `delayMs`, then tells `done` whether it was (false: its
   * lease had ended, or the call failed, and the reaper settles the started
   * attempt when the lease expires, as any other).
   */
  defer(run: LeasedRun, delayMs: number, done: (applied: boolean) => void): void {
    const call = this.backend.defer([{ id: run.id, queue: run.queue, token: run.token, delayMs }]).then(
      ([applied = false]) => done(applied),
      (error: Error) => {
        this.logger.warn(
          `Could not put run ${run.id} back for ${delayMs} ms (${error.message}); ` +
            'the reaper settles it when its lease expires.',
        );
        done(false);
      },
    );
    this.pending.add(call);
    void call.finally(() => this.pending.delete(call));
  }

  /** Resolves once every call under way ended. */
  async settled(): Promise<void> {
    await Promise.all(this.pending);
  }
}
