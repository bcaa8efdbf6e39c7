/** The outcomes whose runs are kept for a result TTL (quarantined runs are kept until requeued, with no TTL). */
export type KeptOutcome = 'successful' | 'failed';

/** A figure per kept outcome. */
export type PerOutcome = Readonly<Record<KeptOutcome, number>>;

/**
 * Bytes one stored run takes, used until enough runs are stored to measure
 * it: a finished run with a small result, as measured in
 * docs/benchmarks.md ("Redis memory per run").
 */
export const DOCUMENTED_BYTES_PER_RUN = 265;

/**
 * Fewest stored runs for the measured figure: below it, the backend's fixed
 * keys (counters, per-minute buckets, scripts' records) would dominate the
 * dataset and inflate the figure per run.
 */
export const MIN_MEASURED_RUNS = 1_000;

/** The minutes the finish rate is read over: the current one and the one before. */
export const RATE_MINUTES = 2;

/**
 * Redis's memory and where the results Threadmill keeps are taking it: what
 * the capacity guard checks, the inspector and the dashboard show, and the
 * metrics expose.
 */
export interface CapacityReport {
  /** Memory in use (`used_memory`), bytes; null when the backend cannot tell. */
  readonly usedBytes: number | null;
  /** `maxmemory`, bytes; null when none is set (then nothing is compared). */
  readonly maxBytes: number | null;
  /**
   * Memory in use once the results kept reach their steady state at the
   * current rate: `usedBytes` plus the runs still to be kept (finish rate ×
   * result TTL, less those kept now) × `bytesPerRun`. Null with `usedBytes`.
   */
  readonly projectedBytes: number | null;
  /** Bytes one stored run takes, measured or documented (see `bytesPerRunSource`). */
  readonly bytesPerRun: number;
  /**
   * `measured`: `used_memory_dataset` over the runs stored now (every
   * segment of every queue), so it includes each run's index entries and
   * the payloads and results actually stored; `documented`: too few runs to
   * measure, {@link DOCUMENTED_BYTES_PER_RUN}.
   */
  readonly bytesPerRunSource: 'measured' | 'documented';
  /** Runs stored now, every segment of every queue. */
  readonly storedRuns: number;
  /** Finished runs kept now, per outcome. */
  readonly kept: PerOutcome;
  /** Runs finished per second over the last {@link RATE_MINUTES} minutes, per kept outcome. */
  readonly finishedPerSecond: PerOutcome;
  /** How long each outcome's result is kept, ms. */
  readonly resultTtlMs: PerOutcome;
  /** The share of `maxBytes` at which the guard warns (`memoryWarningRatio`). */
  readonly warningRatio: number;
  /** Which figures reached `warningRatio × maxBytes`. */
  readonly over: { readonly used: boolean; readonly projected: boolean };
  /** What to tell an operator when a figure is over, naming the figures and the settings to change; else null. */
  readonly warning: string | null;
}
