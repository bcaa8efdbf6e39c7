/** Shortest span a drain-rate sample covers: shorter ones measure the event loop's bursts, not the rate. */
const SAMPLE_MS = 50;
/** Round trips of headroom: a claim's and an acknowledgement's, each twice over. */
const ROUND_TRIPS = 4;

/**
 * How many runs a consumer holds beyond its slots (its prefetch). Given, it
 * is that number. Left to the worker, it follows the drain: enough runs to
 * keep every slot busy for a few claim round trips at the rate runs have
 * been finishing, at least the floor and at most the cap. Fast runs in a
 * deep queue then travel in large claims (few calls per run) without a
 * setting; slow runs keep the floor, so that runs wait in the queue, where
 * any free process takes them, rather than in a busy process.
 *
 * Holding more costs nothing but a delay on a crash: a run held and never
 * started comes back READY when its lease expires, uncharged (docs/storage.md).
 */
export class PrefetchGauge {
  /** Runs finished per ms, smoothed. */
  private rate = 0;
  /** A claim's round trip in ms, smoothed. */
  private roundTripMs = 1;
  private sampledAt = performance.now();
  private sampledCompleted = 0;

  /**
   * @param floor the prefetch when runs are slow (or the given one, when not adaptive)
   * @param cap the most it grows to
   * @param adaptive whether it follows the drain, or stays at `floor`
   */
  constructor(
    private readonly floor: number,
    private readonly cap: number,
    readonly adaptive: boolean,
  ) {}

  /** A claim came back after `ms`. */
  claimReturned(ms: number): void {
    this.roundTripMs += (ms - this.roundTripMs) / 4;
  }

  /** The prefetch now, `completed` being the runs the consumer has finished so far. */
  prefetch(completed: number, now = performance.now()): number {
    if (!this.adaptive) return this.floor;
    const elapsed = now - this.sampledAt;
    if (elapsed >= SAMPLE_MS) {
      this.rate += ((completed - this.sampledCompleted) / elapsed - this.rate) / 2;
      this.sampledAt = now;
      this.sampledCompleted = completed;
    }
    const wanted = Math.ceil(this.rate * this.roundTripMs * ROUND_TRIPS);
    return Math.min(this.cap, Math.max(this.floor, wanted));
  }
}
