import { Cron } from 'croner';

/**
 * Most compiled cron expressions kept in one process. A compiled `Cron` holds
 * its pattern's match tables (croner's years alone are 10,000 entries, ~80 KB),
 * so one per schedule made 100,000 schedules cost gigabytes while they share
 * a few expressions; a process with more expressions than this in use
 * compiles the others again when it reads them (tens of µs), holding no more.
 */
export const MAX_COMPILED_CRONS = 128;

/**
 * A compiled cron expression in one time zone, shared by every schedule of
 * that expression and zone, with the last slot it was asked for.
 *
 * A pass asks the same question of many schedules: those planned at one time
 * (the slot after the pass's `now`) and those due at one slot (the slot after
 * it). Croner's answer in a time zone costs a few dozen `formatToParts` calls
 * (kilobytes of garbage each time), so the last answer is kept and the others
 * reuse it: a pass computes each slot once per expression, not per schedule.
 */
export class CompiledCron {
  private lastAfter = NaN;
  private lastSlot: number | null = null;

  constructor(private readonly cron: Cron) {}

  /**
   * The first slot strictly after `after` (epoch ms), or null when the
   * expression has none. Croner's `nextRun` keeps no state between calls (the
   * cron is paused and never triggered), so a kept answer is the answer.
   */
  slotAfter(after: number): number | null {
    if (after !== this.lastAfter) {
      this.lastSlot = this.cron.nextRun(new Date(after))?.getTime() ?? null;
      this.lastAfter = after;
    }
    return this.lastSlot;
  }
}

/** Compiled expressions by time zone and expression, least recently used first. */
const compiled = new Map<string, CompiledCron>();
/** The key used last: asked again (a pass of one expression), it is already the most recent. */
let lastKey = '';

/**
 * The compiled cron expression `pattern` in time zone `tz`, shared by every
 * schedule of that expression and zone: sharing it changes no slot.
 * @throws Error when croner cannot read the expression or the zone
 */
export function compiledCron(pattern: string, tz: string): CompiledCron {
  const key = `${tz} ${pattern}`;
  let cron = compiled.get(key);
  if (cron && key === lastKey) return cron;
  lastKey = key;
  if (cron) {
    // Moved to the end: the least recently used goes first.
    compiled.delete(key);
  } else {
    cron = new CompiledCron(new Cron(pattern, { timezone: tz, paused: true }));
    if (compiled.size >= MAX_COMPILED_CRONS) compiled.delete(compiled.keys().next().value!);
  }
  compiled.set(key, cron);
  return cron;
}
