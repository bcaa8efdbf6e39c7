import type { LoggerService } from '@nestjs/common';

/**
 * The warning of a worker's step that fails and is retried (a claim, a lease
 * renewal, a broker pass, an acknowledgement): said when the step first
 * fails, not at every retry, and once more, at LOG, when it succeeds again,
 * with how many attempts failed and for how long. An outage of a minute made
 * each step warn every second or so per process; the connection's own lines
 * (`connection-outage.ts`) already say when Redis was lost and when it came
 * back. A step that keeps failing for another reason (a script error) is
 * said again every {@link REPEAT_MS}, so it is never silent for long.
 */
export class RetryNotice {
  /** How long a step that keeps failing goes without another line. */
  static readonly REPEAT_MS = 60_000;
  private failures = 0;
  private since = 0;
  private saidAt = 0;

  constructor(
    /** What the step is, as the line names it (`Lease renewal`). */
    private readonly step: string,
    private readonly logger: Pick<LoggerService, 'log' | 'warn'>,
  ) {}

  /** The step failed with `error`; `retrying` says when it is tried again (`in 200 ms`). */
  failed(error: unknown, retrying: string): void {
    const now = Date.now();
    if (this.failures++ === 0) this.since = now;
    else if (now - this.saidAt < RetryNotice.REPEAT_MS) return;
    this.saidAt = now;
    const again = this.failures > 1 ? ` (${this.failures} attempts have failed since ${iso(this.since)})` : '';
    this.logger.warn(`${this.step} failed, retrying ${retrying}: ${(error as Error).message}${again}`);
  }

  /** The step succeeded: after failures, says so once. */
  succeeded(): void {
    if (this.failures === 0) return;
    const seconds = ((Date.now() - this.since) / 1_000).toFixed(1);
    this.logger.log(`${this.step} succeeded again, after ${this.failures} failed attempt(s) over ${seconds} s.`);
    this.failures = 0;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
