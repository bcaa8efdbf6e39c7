import { compiledCron, type CompiledCron } from './schedule-crons.js';
import type { ScheduleSpec } from './schedule-spec.js';

/**
 * The slots of one schedule definition: when it fires, computed by `croner`
 * for a cron expression (in its time zone, DST included) and by arithmetic
 * for an interval, so that every process computes the same slots. Cheap to
 * make: the compiled expression is shared ({@link compiledCron}), so a
 * scheduler makes one per schedule it reads and keeps none.
 */
export class ScheduleSlots {
  private readonly cron: CompiledCron | undefined;

  constructor(readonly spec: ScheduleSpec) {
    if (spec.cron !== null) this.cron = compiledCron(spec.cron, spec.tz ?? 'UTC');
  }

  /** The first slot strictly after `after` (epoch ms), within `startAt` and `endAt`; null when none is left. */
  after(after: number): number | null {
    const { startAt, endAt, everyMs } = this.spec;
    let slot: number | null;
    if (everyMs !== null) {
      const anchor = startAt ?? 0;
      slot = after < anchor ? anchor : anchor + (Math.floor((after - anchor) / everyMs) + 1) * everyMs;
    } else {
      // A cron slot on or after startAt: the first after the ms before it.
      const from = startAt !== null && startAt - 1 > after ? startAt - 1 : after;
      slot = this.cron!.slotAfter(from);
    }
    return slot !== null && endAt !== null && slot > endAt ? null : slot;
  }

  /** The last slot at or before `at`, given one (`first`) at or before it, and how many lie from `first` to it. */
  latestBy(first: number, at: number, cap: number): { latest: number; count: number; recent: number[] } {
    const { everyMs, endAt } = this.spec;
    const bound = endAt !== null && endAt < at ? endAt : at;
    if (everyMs !== null) {
      const count = Math.floor((bound - first) / everyMs) + 1;
      const latest = first + (count - 1) * everyMs;
      const kept = Math.min(count, cap);
      const recent = Array.from({ length: kept }, (_, i) => latest - (kept - 1 - i) * everyMs);
      return { latest, count, recent };
    }
    // Cron slots one by one, keeping the last `cap`: a catch-up after a
    // long outage of a frequent cron walks many slots, once.
    const recent = [first];
    let count = 1;
    for (let slot = this.after(first); slot !== null && slot <= bound; slot = this.after(slot)) {
      count++;
      recent.push(slot);
      if (recent.length > cap) recent.shift();
    }
    return { latest: recent.at(-1)!, count, recent };
  }
}
