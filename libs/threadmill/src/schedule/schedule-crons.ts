import { Cron } from 'croner';

/**
 * Most compiled cron expressions kept in one process. A compiled `Cron` holds
 * its pattern's match tables (croner's years alone are 10,000 entries, ~80 KB),
 * so one per schedule made 100,000 schedules cost gigabytes while they share
 * a few expressions; a process with more expressions than this in use
 * compiles the others again when it reads them (tens of µs), holding no more.
 */
export const MAX_COMPILED_CRONS = 128;

/** Compiled expressions by time zone and expression, least recently used first. */
const compiled = new Map<string, Cron>();

/**
 * The compiled cron expression `pattern` in time zone `tz`, shared by every
 * schedule of that expression and zone: its `nextRun` keeps no state between
 * calls (the cron is paused and never triggered), so sharing it changes no slot.
 * @throws Error when croner cannot read the expression or the zone
 */
export function compiledCron(pattern: string, tz: string): Cron {
  const key = `${tz} ${pattern}`;
  let cron = compiled.get(key);
  if (cron) {
    // Moved to the end: the least recently used goes first.
    compiled.delete(key);
  } else {
    cron = new Cron(pattern, { timezone: tz, paused: true });
    if (compiled.size >= MAX_COMPILED_CRONS) compiled.delete(compiled.keys().next().value!);
  }
  compiled.set(key, cron);
  return cron;
}
