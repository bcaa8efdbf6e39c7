/**
 * The clock of the in-memory backend: the wall clock plus whatever a test
 * added with {@link advance}. It stands in for the Redis clock (`TIME`), so
 * deferred runs, leases and result TTLs all follow it.
 */
export class MemoryClock {
  private offsetMs = 0;

  /** Epoch ms, as the backend sees it. */
  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** Moves the clock forward by `ms` (never back: deadlines already given must not move away). */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`The testing clock only moves forward: advance it by a number of ms >= 0, got ${ms}.`);
    }
    this.offsetMs += ms;
  }
}
