/** Options of a worker pool, from `runWorker`'s command line or environment. */
export interface WorkerOptions {
  /**
   * The backend the pool consumes: the `name` of one of the application's
   * `ThreadmillModule`s. A pool consumes one backend; run one pool per backend.
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Worker processes the supervisor forks.
   * @defaultValue the number of CPUs
   */
  workers?: number;
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
   * Given, it is fixed; left out, it adapts (see `ThreadmillServerOptions.prefetch`).
   * @defaultValue adaptive, at least `2`
   */
  prefetch?: number;
  /**
   * Recycle a process after this many runs; 0 never.
   * @defaultValue `0`
   */
  maxTasks?: number;
  /**
   * Up to this many runs added at random to each process's `maxTasks`, so
   * processes do not all restart at once.
   * @defaultValue `0`
   */
  maxTasksJitter?: number;
  /**
   * Exit once the queues hold no ready, deferred or running run.
   * @defaultValue `false`
   */
  exitEmpty?: boolean;
  /**
   * How long a stopping worker waits for running attempts before it stops hard.
   * @defaultValue `30000`
   */
  shutdownTimeoutMs?: number;
  /**
   * Serve the pool's Prometheus metrics on this port (the supervisor sums its
   * processes'); 0 serves none. Needs `prom-client` installed.
   * @defaultValue `0`
   */
  metricsPort?: number;
  /**
   * Interface the metrics port listens on.
   * @defaultValue `'0.0.0.0'`
   */
  metricsHost?: string;
  /**
   * Run one full garbage collection after the process booted and before it
   * claims its first run, so that the first scavenges under load do not copy
   * what booting left behind (`worker/collect-boot-garbage.ts`; it turns V8's
   * `--expose-gc` on and off for an instant). `false` leaves the collector
   * alone.
   * @defaultValue `true`
   */
  bootGc?: boolean;
}

/** What one process of a pool does. */
export interface WorkerRole {
  /** Claim and run tasks (a pool member). */
  readonly consume: boolean;
  /** Promote deferred runs and reap expired leases (the supervisor, once per pool). */
  readonly broker: boolean;
  /** The process's slot in its pool, part of its identity `host:pid:slot`. */
  readonly slot: number;
  /** This process's run limit, jitter applied; 0 never. */
  readonly maxTasks: number;
}

/** The settings of one worker process: the pool's options and its role in the pool. */
export interface WorkerSettings {
  readonly queues: readonly string[];
  readonly concurrency: number;
  /** Undefined: adaptive (see `PrefetchGauge`). */
  readonly prefetch: number | undefined;
  readonly exitEmpty: boolean;
  readonly shutdownTimeoutMs: number;
  readonly role: WorkerRole;
  /** See {@link WorkerOptions.bootGc}. @defaultValue `true` */
  readonly bootGc?: boolean;
  /** See `ThreadmillServerOptions.logSummaryIntervalMs`. @defaultValue `60000` */
  readonly logSummaryIntervalMs?: number;
}
