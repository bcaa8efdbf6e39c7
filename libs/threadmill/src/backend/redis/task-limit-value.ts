import type { StoredTaskLimit } from '../task-backend.js';

/** A task limit as `lua/task-limit.lua` stores it: `max|perMs|slackMs|concurrency`, each part empty when unset. */
export function formatTaskLimit(limit: StoredTaskLimit): string {
  const { rate, concurrency } = limit;
  const parts = rate ? [rate.max, rate.perMs, rate.startSlackMs] : ['', '', ''];
  return [...parts, concurrency ?? ''].join('|');
}

/** The stored value of a task limit, or null for none (or a value this version cannot read). */
export function parseTaskLimit(value: string | null | undefined): StoredTaskLimit | null {
  if (!value) return null;
  const parts = value.split('|');
  if (parts.length !== 4 || !parts.every((part) => part === '' || /^\d+$/.test(part))) return null;
  const [max, perMs, startSlackMs, concurrency] = parts.map((part) => (part === '' ? undefined : Number(part)));
  return {
    ...(max !== undefined && perMs !== undefined ? { rate: { max, perMs, startSlackMs: startSlackMs ?? 0 } } : {}),
    ...(concurrency !== undefined ? { concurrency } : {}),
  };
}
