import type { LeasedRun } from '../records/backend-records.js';

/**
 * The fewest runs a claim gives a queue it serves, unless fewer are wanted,
 * ready or allowed: a claim of `want` runs serves about `want / CLAIM_MIN_SHARE`
 * queues at most, each paying its fixed cost for a worthwhile batch, and the
 * next claims go on from where it stopped (`docs/storage.md`, "Fairness").
 */
export const CLAIM_MIN_SHARE = 32;

/**
 * The runs a claim leased, in its order, and where its rotation stopped:
 * the next claim of the same queues by the same consumer passes
 * {@link ClaimedRuns.next} as its `offset`, so the queues this claim did not
 * reach come first.
 */
export interface ClaimedRuns extends Array<LeasedRun> {
  /**
   * The rotation's place after the last queue that leased a run: the claim's
   * `offset` (reduced modulo the queues) plus the steps it went, so at least
   * the number of queues when the rotation went past the last one; the
   * claim's `offset` when it leased nothing. Any place is valid as an offset.
   */
  readonly next: number;
}

/**
 * `runs` with the place its claim's rotation stopped at, a property that is
 * not enumerable: the runs compare, copy and print as the array they are.
 */
export function claimedRuns(runs: LeasedRun[], next: number): ClaimedRuns {
  return Object.defineProperty(runs, 'next', { value: next, enumerable: false }) as ClaimedRuns;
}

/**
 * Takes up to `take` runs of queue `q` (0-based) for a claim; returns how
 * many it leased and whether the queue may give more in this claim.
 */
export type ServeQueue = (q: number, take: number) => readonly [leased: number, active: boolean];

/**
 * The fairness rule of a claim, as `lua/includes/claim-rotation.lua` applies
 * it: the active queues (`active[q]`, 0-based) are served in rotation from
 * `offset`, in passes, until `want` runs are leased or none is active. Each
 * pass gives every active queue it reaches a share of what is left: an equal
 * share, but at least {@link CLAIM_MIN_SHARE} (or what is left, when less).
 * Returns the runs leased and where the rotation stopped (see {@link ClaimedRuns.next}).
 */
export function rotateClaim(
  active: boolean[],
  want: number,
  offset: number,
  serve: ServeQueue,
  minShare = CLAIM_MIN_SHARE,
): { readonly claimed: number; readonly next: number } {
  const queueCount = active.length;
  const start = queueCount === 0 ? 0 : offset % queueCount;
  let activeCount = active.filter(Boolean).length;
  let claimed = 0;
  let next = start;
  for (let pass = 0; claimed < want && activeCount > 0; pass++) {
    const left = want - claimed;
    const share = Math.max(Math.ceil(left / activeCount), Math.min(minShare, left));
    for (let step = 0; step < queueCount && claimed < want; step++) {
      const q = (start + step) % queueCount;
      if (!active[q]) continue;
      const [leased, stillActive] = serve(q, Math.min(share, want - claimed));
      claimed += leased;
      if (leased > 0) next = start + pass * queueCount + step + 1;
      if (!stillActive) {
        active[q] = false;
        activeCount--;
      }
    }
  }
  return { claimed, next };
}
