import type { CapacityReport } from './capacity-report.js';

/** What to log for a capacity reading. */
export interface CapacityNotice {
  readonly level: 'warn' | 'log';
  readonly message: string;
}

/**
 * Remembers which capacity figures were over the threshold at the last
 * reading, so a warning is logged once per crossing, not at every check:
 * again when a figure drops back under and crosses again, and when the
 * memory in use crosses after the projection did.
 */
export class CapacityAlarm {
  private over = { used: false, projected: false };

  /** What to log for this reading: a warning when a figure newly crossed, a notice when all cleared, else nothing. */
  observe(report: CapacityReport): CapacityNotice | null {
    const before = this.over;
    this.over = report.over;
    const crossed = (report.over.used && !before.used) || (report.over.projected && !before.projected);
    if (crossed && report.warning) return { level: 'warn', message: report.warning };
    if ((before.used || before.projected) && !report.over.used && !report.over.projected) {
      return {
        level: 'log',
        message:
          `Redis memory is back under memoryWarningRatio ${report.warningRatio} of maxmemory, ` +
          'in use and projected for kept results.',
      };
    }
    return null;
  }
}
