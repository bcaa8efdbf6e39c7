/**
 * The rules of deduplication keys (`lua/includes/dedupe.lua`), as plain
 * functions: the executable specification the in-memory backend runs and
 * the model-based test's model applies (see `lease-rules.ts`).
 */

/**
 * Where the run a key names stands, as an enqueue that names the key reads
 * it: `missing` (gone, or a run of that id in another queue), `settled`,
 * `leased`, `waiting` (READY and never charged an attempt) or `active`
 * (READY again after an attempt: a retry).
 */
export type KeyRunState = 'missing' | 'settled' | 'leased' | 'waiting' | 'active';

/** What a key recorded when its run took it. */
export interface HeldKey {
  /** When the run took the key (ms). */
  readonly firstAt: number;
  /** How long a drop key holds by time alone (its `ttlMs`); 0 for none. */
  readonly holdMs: number;
  /** Whether it holds until its run settles (`releaseOn: 'finish'`) rather than until it starts. */
  readonly untilFinish: boolean;
}

/**
 * Why a drop key still holds at `now`, so that an enqueue naming it is
 * answered with its run: by time (within `holdMs` of `firstAt`), by state
 * (its run waits to start, or has not settled for a key held until the
 * finish), either, or neither. A key whose run is missing never holds.
 */
export function dropKeyHolds(key: HeldKey, where: KeyRunState, now: number): { byTime: boolean; byState: boolean } {
  if (where === 'missing') return { byTime: false, byState: false };
  return {
    byTime: key.holdMs > 0 && now < key.firstAt + key.holdMs,
    byState: where === 'waiting' || (key.untilFinish && where !== 'settled'),
  };
}

/**
 * The new due time of a debounced run (its key's run still waits deferred):
 * `ttlMs` from now, but never past `maxWaitMs` from when the key was taken
 * (0: no cap).
 */
export function debouncedDue(now: number, ttlMs: number, firstAt: number, maxWaitMs: number): number {
  const due = now + ttlMs;
  return maxWaitMs > 0 && due > firstAt + maxWaitMs ? firstAt + maxWaitMs : due;
}
