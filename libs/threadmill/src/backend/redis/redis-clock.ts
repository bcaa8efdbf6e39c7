import { hostname } from 'node:os';

/**
 * How fast two clocks may drift apart, per ms of elapsed time: Redis's wall
 * clock may be slewed by NTP (at most 500 ppm) and this host's monotonic
 * clock drifts too. A bound kept from an older reply widens by this much per
 * ms, so that it stays a bound.
 */
const DRIFT_PER_MS = 0.001;
/** Past this offset between this host's wall clock and Redis's, a warning is logged (once per crossing). */
export const CLOCK_SKEW_WARNING_MS = 500;

/**
 * What this process knows of Redis's clock, from replies that carry Redis's
 * time (`TIME`, a claim's, a renewal's): a reply stamped `T` by Redis was
 * made between the call's send and its reply's arrival, so the offset of
 * Redis's clock over this host's monotonic clock (`performance.now()`) lies
 * in `[T - receivedAt, T + 1 - sentAt]` (Redis's milliseconds are
 * truncated). Every reply narrows the interval, which widens with drift as
 * it ages; a reply outside it (a clock was stepped) starts it anew.
 *
 * Decisions use the bound that is safe for them, measured on this host's
 * monotonic clock alone, so they hold whatever this host's wall clock
 * says (a VM after a suspend, a container without NTP): nothing compares a
 * local wall time with a Redis time (`docs/guarantees.md#clocks`).
 */
export class RedisClock {
  /** Bounds of Redis's epoch ms minus `performance.now()`, as of {@link at}. */
  private low = -Infinity;
  private high = Infinity;
  private at = 0;
  /** This host's wall clock minus Redis's, as last estimated (ms). */
  private offset: number | undefined;
  private warned = false;

  /**
   * @param where names Redis in the warning (its address)
   * @param warn logs the skew warning
   */
  constructor(
    private readonly where: string,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * Narrows the estimate with a reply stamped `redisNow` by Redis.
   * @param sentAt `performance.now()` when the call went out
   * @param receivedAt `performance.now()` when its reply arrived
   */
  observe(redisNow: number, sentAt: number, receivedAt: number): void {
    const low = redisNow - receivedAt;
    const high = redisNow + 1 - sentAt;
    const widen = (receivedAt - this.at) * DRIFT_PER_MS;
    let keptLow = Math.max(this.low - widen, low);
    let keptHigh = Math.min(this.high + widen, high);
    if (keptLow > keptHigh) {
      keptLow = low;
      keptHigh = high;
    }
    this.low = keptLow;
    this.high = keptHigh;
    this.at = receivedAt;
    this.offset = Date.now() - (performance.now() + (keptLow + keptHigh) / 2);
    this.check();
  }

  /** Whether a reply has been seen: before it, {@link startBy} and {@link now} are guesses. */
  get known(): boolean {
    return this.high !== Infinity;
  }

  /**
   * The earliest `performance.now()` at which Redis's clock may read
   * `redisTime + withinMs`: an attempt that must start within `withinMs` of
   * a claim made at `redisTime` starts only before it.
   */
  startBy(redisTime: number, withinMs: number, now = performance.now()): number {
    return redisTime + withinMs - this.upper(now);
  }

  /** Redis's time now, estimated (epoch ms); this host's wall clock before the first reply. */
  now(): number {
    if (!this.known) return Date.now();
    return performance.now() + (this.low + this.high) / 2;
  }

  /** How far this host's wall clock runs ahead of Redis's (ms; negative: behind), or undefined before a reply. */
  offsetMs(): number | undefined {
    return this.offset === undefined ? undefined : Math.round(this.offset);
  }

  /** The largest offset Redis's clock may have over the monotonic clock now. */
  private upper(now: number): number {
    return this.high + Math.max(0, now - this.at) * DRIFT_PER_MS;
  }

  private check(): void {
    const skewed = this.offset !== undefined && Math.abs(this.offset) > CLOCK_SKEW_WARNING_MS;
    if (skewed && !this.warned) {
      const ms = Math.round(this.offset!);
      this.warn(
        `The clock of ${hostname()} (pid ${process.pid}) runs ${Math.abs(ms)} ms ` +
          `${ms > 0 ? 'ahead of' : 'behind'} the clock of Redis at ${this.where}. Threadmill decides by ` +
          "Redis's clock and by elapsed time, so runs are unaffected, but times this process shows or " +
          'gives as dates (runAfter) are off by as much: synchronise the host clocks (NTP).',
      );
    }
    // Warned again only after it came back well within the threshold, so an
    // offset hovering at the threshold does not log at every reply.
    if (skewed) this.warned = true;
    else if (Math.abs(this.offset ?? 0) < CLOCK_SKEW_WARNING_MS / 2) this.warned = false;
  }
}
