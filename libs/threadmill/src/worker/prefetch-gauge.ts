/** Shortest span a drain-rate sample covers: shorter ones measure the event loop's bursts, not the rate. */
const SAMPLE_MS = 50;
/** Round trips of headroom: a claim's and an acknowledgement's, each twice over. */
const ROUND_TRIPS = 4;
/** Payload bytes an adaptive prefetch holds at most: large payloads keep it short. */
const PREFETCH_BYTES = 32 * 2 ** 20;
/** A rate standing for "as fast as runs can be fed": slots that are never busy. */
const UNBOUNDED_RATE = 1e6;

/** The event loop's busy share since the previous call (0 to 1). */
export type LoopUtilization = () => number;

/** The process's event loop utilization, as `performance.eventLoopUtilization` measures it. */
export function eventLoopUtilization(): LoopUtilization {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const share = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return share;
  };
}

/**
 * How many runs a consumer holds beyond its slots (its prefetch). Given, it
 * is that number. Left to the worker, it follows what the slots could finish:
 * enough runs to keep every slot busy for a few claim round trips, at least
 * the floor and at most the cap (and what fits in a payload budget). Fast
 * runs in a deep queue then travel in large claims (few calls per run)
 * without a setting; slow runs keep the floor, so that runs wait in the
 * queue, where any free process takes them, rather than in a busy process.
 *
 * The rate it plans for is what the process could finish, not the rate
 * observed: a process whose prefetch is too short starves, and the observed
 * rate would keep the prefetch as short as it is. It is the lower of two
 * bounds: the event loop's (runs observed per ms over the share of the time
 * the loop was busy: a process that idles waiting for runs could take more,
 * one whose loop is saturated by synchronous work could not) and the slots'
 * (runs finished per ms of busy slot time, times the slots: runs that await
 * I/O are bounded by their duration, not by the loop). Samples grow the rate
 * by halves and shrink it at once, so that runs turning slow are not held for
 * long; the consumer hands back what it holds far beyond the prefetch.
 *
 * Holding more costs nothing but a delay on a crash: a run held and never
 * started comes back READY when its lease expires, uncharged (docs/storage.md).
 */
export class PrefetchGauge {
  /** Runs the slots could finish per ms, smoothed; undefined before the first sample. */
  private rate: number | undefined;
  /** A claim's round trip in ms, smoothed. */
  private roundTripMs = 1;
  /** Payload characters per claimed run, smoothed. */
  private payloadChars = 0;
  private sampledAt: number;
  private sampledCompleted = 0;
  /** Slot-ms the slots were busy since the last sample. */
  private busy = 0;
  private lastAt: number;

  /**
   * @param floor the prefetch when runs are slow (or the given one, when not adaptive)
   * @param cap the most it grows to
   * @param adaptive whether it follows the drain, or stays at `floor`
   * @param concurrency the consumer's slots
   * @param utilization the event loop's busy share since it was last asked
   * @param now the clock's reading at the start (`performance.now()`)
   */
  constructor(
    private readonly floor: number,
    private readonly cap: number,
    readonly adaptive: boolean,
    private readonly concurrency = 1,
    private readonly utilization: LoopUtilization = eventLoopUtilization(),
    now = performance.now(),
  ) {
    this.sampledAt = now;
    this.lastAt = now;
  }

  /** A claim came back after `ms`. */
  claimReturned(ms: number): void {
    this.roundTripMs += (ms - this.roundTripMs) / 4;
  }

  /** A claim brought `count` runs whose payloads total `chars` characters. */
  claimed(count: number, chars: number): void {
    if (count === 0) return;
    const each = chars / count;
    this.payloadChars = this.payloadChars === 0 ? each : this.payloadChars + (each - this.payloadChars) / 4;
  }

  /**
   * The prefetch now, `completed` being the runs the consumer has finished
   * so far and `running` the attempts executing now.
   */
  prefetch(completed: number, running = 0, now = performance.now()): number {
    if (!this.adaptive) return this.floor;
    this.busy += running * (now - this.lastAt);
    this.lastAt = now;
    const elapsed = now - this.sampledAt;
    if (elapsed >= SAMPLE_MS) {
      const finished = completed - this.sampledCompleted;
      const loopBusy = this.utilization();
      // An idle span (nothing ran) says nothing about the runs: keep the rate.
      if (finished > 0 || this.busy > 0) {
        const byLoop = loopBusy > 0 ? finished / elapsed / loopBusy : UNBOUNDED_RATE;
        const bySlots = this.busy > 0 ? (finished * this.concurrency) / this.busy : UNBOUNDED_RATE;
        const potential = Math.min(UNBOUNDED_RATE, byLoop, bySlots);
        this.rate =
          this.rate === undefined || potential < this.rate ? potential : this.rate + (potential - this.rate) / 2;
      }
      this.sampledAt = now;
      this.sampledCompleted = completed;
      this.busy = 0;
    }
    const wanted = Math.ceil((this.rate ?? 0) * this.roundTripMs * ROUND_TRIPS);
    const fits = this.payloadChars > 0 ? Math.floor(PREFETCH_BYTES / this.payloadChars) : this.cap;
    return Math.max(this.floor, Math.min(this.cap, fits, wanted));
  }
}
