import type { LeasedRun } from '../task-backend.js';
import { freshHead } from './fresh-record.js';
import { RedisLeasedRun } from './leased-run.js';

/**
 * The run an enqueue leased to an idle consumer, from its inbox entry
 * `token|claimedAt|deadline|queue|id|record` (see `lua/includes/idle.lua`):
 * a first attempt, whose fresh record carries the rest.
 */
export function deliveredRun(entry: string, worker: string): LeasedRun {
  const fields: string[] = [];
  let at = 0;
  for (let i = 0; i < 5; i++) {
    const next = entry.indexOf('|', at);
    fields.push(entry.slice(at, next));
    at = next + 1;
  }
  const [token, claimedAt, deadline, queue, id] = fields as [string, string, string, string, string];
  const [enqueuedAt, , payload] = freshHead(entry.slice(at));
  const leasedAt = Number(claimedAt);
  return new RedisLeasedRun(
    id,
    queue,
    token,
    Number(deadline),
    payload,
    enqueuedAt,
    leasedAt,
    1,
    leasedAt,
    0,
    worker,
    '',
  );
}
