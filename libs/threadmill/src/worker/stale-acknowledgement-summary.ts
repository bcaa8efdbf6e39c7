import { Logger, type LoggerService } from '@nestjs/common';
import type { StaleReason } from '../events/run-events.js';

/** How often a worker summarises its stale acknowledgements, by default. */
export const LOG_SUMMARY_INTERVAL_MS = 60_000;

/**
 * Summarises the acknowledgements Redis discarded as stale, at most one line
 * per interval, instead of a line per batch. Most are expected: a run
 * cancelled (or purged) while it ran has its late result discarded, and a
 * soak that cancelled 2% of its runs logged ten thousand warnings for it.
 * The line is a warning only when leases expired among them (a worker that
 * stalled, or lost Redis, for longer than a lease); the counts by reason are
 * in `threadmill_stale_acks_total`.
 *
 * The first discard of a window starts its timer; the line comes when it
 * ends, so two lines are at least an interval apart. {@link flush} says what
 * is left at once (a worker that stops).
 */
export class StaleAcknowledgementSummary {
  private revoked = 0;
  private expired = 0;
  /** When the window's first discard was counted (`Date.now()`). */
  private since = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** The longest a discard waits to be told, and the shortest time between two lines. */
    readonly intervalMs = LOG_SUMMARY_INTERVAL_MS,
    private readonly logger: Pick<LoggerService, 'log' | 'warn'> = new Logger('Threadmill'),
  ) {}

  /** `count` acknowledgements were discarded for `reason`. */
  count(reason: StaleReason, count: number): void {
    if (reason === 'revoked') this.revoked += count;
    else this.expired += count;
    if (this.timer) return;
    this.since = Date.now();
    this.timer = setTimeout(() => this.flush(), this.intervalMs);
    // A summary never keeps the process alive: a stopping worker flushes it.
    this.timer.unref();
  }

  /** Logs the discards counted since the last line, if any. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const { revoked, expired } = this;
    if (revoked + expired === 0) return;
    this.revoked = 0;
    this.expired = 0;
    const parts: string[] = [];
    if (revoked > 0) parts.push(`${revoked} of runs cancelled or purged while they ran`);
    if (expired > 0) parts.push(`${expired} after their lease expired`);
    const line =
      `Discarded ${revoked + expired} stale acknowledgement(s) in the last ${span(Date.now() - this.since)}: ` +
      `${parts.join(', ')} (threadmill_stale_acks_total by reason)`;
    if (expired === 0) {
      this.logger.log(line);
      return;
    }
    this.logger.warn(
      `${line}. A lease expires when its worker does not renew it in time (a blocked event loop, a stalled ` +
        'process, Redis out of reach): the reaper recovered those runs, and their attempts may have run twice.',
    );
  }
}

/** A window's length as the line says it: "minute" for the default, else seconds. */
function span(ms: number): string {
  if (Math.abs(ms - 60_000) < 1_000) return 'minute';
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
