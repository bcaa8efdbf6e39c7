import type { LeasedRun } from '../task-backend.js';
import { freshHead } from './fresh-record.js';
import { RedisLeasedRun } from './leased-run.js';

/** The claim script's reply (see `lua/claim.lua`). */
export type ClaimReply = [
  now: number,
  runs: unknown[],
  ghosts: string[],
  capped: number[],
  limited: number[],
  /** Where the rotation stopped: the next claim's offset. */
  next: number,
];
/** How a claimed run that is not a fresh first attempt comes back. */
type ClaimedHead = [
  queue: number,
  deadline: number,
  enqueuedAt: string,
  history: 0 | [attempts: number, workers: string, errors: string, startedAt: number | string, recoveries: number],
  /** For a run of a rate-limited limit group: how long after the claim it may start (ms). */
  slack?: number,
];

/**
 * The runs of a claim reply.
 * @param token the claim's call id, the lease token of every run it leased
 * @param worker the claiming consumer's id, JSON-encoded
 * @param leaseTtlMs the default lease length the claim was made with
 */
export function leasedRuns(
  now: number,
  token: string,
  flat: unknown[],
  queues: readonly string[],
  worker: string,
  leaseTtlMs: number,
): LeasedRun[] {
  const defaultDeadline = now + leaseTtlMs;
  // A literal: V8 learns at a literal's site that the array holds objects
  // and creates it so (an array from `map` of an empty list starts out
  // holding small integers, and the first run pushed would change its kind
  // in every claim, throwing the optimised claim path back to the
  // interpreter while the worker warms up).
  const runs: LeasedRun[] = [];
  let queue = '';
  const fresh = (id: string, record: string): void => {
    // A first attempt from the fresh hash: the record says the rest.
    const [enqueuedAt, override, payload] = freshHead(record);
    const deadline = override === undefined ? defaultDeadline : now + override;
    runs.push(new RedisLeasedRun(id, queue, token, deadline, payload, enqueuedAt, now, 1, now, 0, worker, ''));
  };
  for (const item of flat as (number | string | [string, string] | [string, ClaimedHead, string])[]) {
    if (typeof item === 'number') {
      // A queue index starts each group of runs.
      queue = queues[item - 1]!;
    } else if (typeof item === 'string') {
      // The group's first attempts, joined: `id\nrecord\n...` (neither holds a newline).
      for (let at = 0; at < item.length;) {
        const idEnd = item.indexOf('\n', at);
        if (idEnd < 0) throw new Error(`Malformed claim reply: a run id without its record at ${at}.`);
        let recordEnd = item.indexOf('\n', idEnd + 1);
        if (recordEnd < 0) recordEnd = item.length;
        fresh(item.slice(at, idEnd), item.slice(idEnd + 1, recordEnd));
        at = recordEnd + 1;
      }
    } else if (item.length === 2) {
      // A first attempt whose id or record holds a newline.
      fresh(item[0], item[1]);
    } else {
      const [id, [q, deadline, enqueuedAt, history, slack], payload] = item;
      const [attempts, workers, errors, startedAt, recoveries] = history === 0 ? [1, worker, '', now, 0] : history;
      const run: LeasedRun = new RedisLeasedRun(
        id,
        queues[q - 1]!,
        token,
        deadline,
        payload,
        Number(enqueuedAt),
        now,
        attempts,
        Number(startedAt),
        recoveries,
        workers,
        errors,
      );
      if (slack !== undefined) run.startWithinMs = slack;
      runs.push(run);
    }
  }
  return runs;
}
