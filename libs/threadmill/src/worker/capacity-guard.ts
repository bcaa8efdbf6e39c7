import { Logger } from '@nestjs/common';
import { CapacityAlarm } from '../capacity/capacity-alarm.js';
import type { CapacityReport } from '../capacity/capacity-report.js';

/**
 * Watches Redis's memory from the process that runs the broker (once per
 * pool): after a broker pass, at most every `intervalMs`, it reads a
 * capacity report (one `INFO memory`, the counts, the last minutes'
 * buckets) and logs a warning when the memory in use, or the memory
 * projected for the results kept, reaches `memoryWarningRatio` of
 * `maxmemory`: once per crossing, so an operator has time to act before
 * Redis refuses enqueues.
 *
 * It keeps no timer of its own: it checks when the broker wakes (every
 * `brokerIntervalMs` while runs are leased or deferred, at once when a run is
 * leased or deferred). An idle pool's broker blocks for up to a minute and
 * sends Redis nothing meanwhile; so does the guard, when nothing finishes
 * and no result is added.
 */
export class CapacityGuard {
  private readonly logger = new Logger('Threadmill');
  private readonly alarm = new CapacityAlarm();
  private checking: Promise<void> | undefined;
  private lastCheckAt = -Infinity;
  private stopped = false;
  private failing = false;

  constructor(
    private readonly read: () => Promise<CapacityReport>,
    private readonly intervalMs: number,
  ) {}

  /** Checks now unless a check is under way or the last one began less than `intervalMs` ago. */
  nudge(): void {
    const now = performance.now();
    if (this.stopped || this.checking || now - this.lastCheckAt < this.intervalMs) return;
    this.lastCheckAt = now;
    this.checking = this.check().finally(() => (this.checking = undefined));
  }

  /** Checks no more; waits for a check under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.checking;
  }

  /** One check: logs what the alarm says of this reading. */
  async check(): Promise<void> {
    let report: CapacityReport;
    try {
      report = await this.read();
    } catch (error) {
      // Redis down is reported elsewhere (enqueues, the broker); say once that the guard is blind meanwhile.
      if (!this.failing) {
        this.logger.warn(
          `The capacity guard could not read Redis's memory (${(error as Error).message}); ` +
            'it tries again after the next broker pass.',
        );
      }
      this.failing = true;
      return;
    }
    this.failing = false;
    const notice = this.alarm.observe(report);
    if (notice?.level === 'warn') this.logger.warn(notice.message);
    else if (notice) this.logger.log(notice.message);
  }
}
