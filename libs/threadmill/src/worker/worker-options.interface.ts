/** Options of a worker process, from `runWorker`'s command line or environment. */
export interface WorkerOptions {
  /**
   * Queues to consume.
   * @defaultValue every queue of the module's `queues`
   */
  queues?: string[];
  /**
   * Attempts a process runs at once (async slots).
   * @defaultValue `10`
   */
  concurrency?: number;
  /**
   * Runs a process may hold beyond its free slots, so a freed slot starts the
   * next run without waiting for a round trip. Prefetched runs are leased (and
   * renewed) but not started; a stopping worker hands them back at once.
   * @defaultValue `2`
   */
  prefetch?: number;
  /**
   * Exit once the queues hold no ready, deferred or running run.
   * @defaultValue `false`
   */
  exitEmpty?: boolean;
  /**
   * Stop claiming after this many runs so the process can be recycled; 0 never.
   * @defaultValue `0`
   */
  maxTasks?: number;
  /**
   * How long a stopping worker waits for running attempts before it stops hard.
   * @defaultValue `30000`
   */
  shutdownTimeoutMs?: number;
  /**
   * Run the broker (promotion and reaping) in this process.
   * @defaultValue `true`
   */
  broker?: boolean;
  /**
   * This process's slot in its pool, part of its identity `host:pid:slot`.
   * @defaultValue `0`
   */
  slot?: number;
}

export type ResolvedWorkerOptions = Required<WorkerOptions>;
