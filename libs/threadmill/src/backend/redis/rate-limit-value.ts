import type { StoredRateLimit } from '../task-backend.js';

/** A rate limit as `lua/rate.lua` stores it: `max|perMs|slackMs`. */
export function formatRateLimit(limit: StoredRateLimit): string {
  return `${limit.max}|${limit.perMs}|${limit.startSlackMs}`;
}

/** The stored value of a rate limit, or null for none (or a value this version cannot read). */
export function parseRateLimit(value: string | null | undefined): StoredRateLimit | null {
  if (!value) return null;
  const [max, perMs, startSlackMs] = value.split('|').map(Number);
  if (![max, perMs, startSlackMs].every((n) => Number.isSafeInteger(n))) return null;
  return { max: max!, perMs: perMs!, startSlackMs: startSlackMs! };
}
