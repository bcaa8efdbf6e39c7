/** How one consumer works; derived from the worker options. */
export interface ConsumerSettings {
  readonly queues: readonly string[];
  /** Attempts running at once. */
  readonly concurrency: number;
  /**
   * Runs held beyond the slots, so a freed slot starts the next run without
   * a round trip: this many, or with `adaptivePrefetch` at least this many,
   * more while runs finish fast (see `PrefetchGauge`).
   */
  readonly prefetch: number;
  readonly adaptivePrefetch: boolean;
  /** Most runs per claim. */
  readonly batchSize: number;
  readonly workerId: string;
  /** Stop once the queues hold no ready, deferred or running run. */
  readonly exitWhenEmpty: boolean;
  /** Stop claiming after this many runs (0: never), so the process can be recycled. */
  readonly maxTasks: number;
  /**
   * Longest blocked wait of an idle consumer before it claims anyway: at
   * most a third of the shortest lease, so that a run claimed at the end of
   * a wait is surely still leased when it arrives (its lease is trusted
   * from when the wait was sent).
   */
  readonly idleWaitMs: number;
}
