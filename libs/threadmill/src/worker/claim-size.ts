import type { ConsumerSettings } from './consumer-settings.js';

/** Claims a consumer may have under way at once. */
const MAX_CLAIMS_IN_FLIGHT = 2;

/** What sizing the next claim reads of a consumer's state. */
export interface ClaimState {
  /** Claims under way. */
  readonly inFlight: number;
  /** Runs held: executing, prefetched, and finished but not yet acknowledged. */
  readonly held: number;
  /** Capacity the claims under way reserve. */
  readonly reserved: number;
  /** Runs claimed since the consumer started (for `maxTasks`). */
  readonly claimed: number;
  /** The last claim came back full: there is a backlog worth a second claim in flight. */
  readonly backlog: boolean;
  /** Runs it may hold beyond its slots now (see `PrefetchGauge`). */
  readonly prefetch: number;
}

/**
 * How many runs to claim now, or 0 to wait: all the free capacity when the
 * process holds nothing, else only once a worthwhile share of it is free,
 * so that a busy process claims in batches rather than one run at a time.
 * A second claim may go out while one is in flight, but only a full one
 * behind a backlog.
 */
export function claimSize(settings: ConsumerSettings, state: ClaimState): number {
  const { concurrency, batchSize, maxTasks } = settings;
  if (state.inFlight >= MAX_CLAIMS_IN_FLIGHT) return 0;
  const capacity = concurrency + state.prefetch;
  let want = Math.min(capacity - state.held - state.reserved, batchSize);
  if (maxTasks > 0) want = Math.min(want, maxTasks - state.claimed - state.reserved);
  if (want <= 0) return 0;
  // A second claim only overlaps the first behind a backlog: a worker woken
  // for one run would otherwise make that run's claim wait for an empty one.
  if (state.inFlight > 0) return want === batchSize && state.backlog ? want : 0;
  const worthwhile = Math.max(1, Math.min(batchSize, Math.floor(capacity / 4)));
  return state.held === 0 || want >= worthwhile ? want : 0;
}
