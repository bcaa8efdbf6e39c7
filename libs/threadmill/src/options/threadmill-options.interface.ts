import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RateLimit } from '../limits/rate-limit.js';
import type { ResultTtl } from '../records/result-ttl.js';
import type { EnqueueConfirmation } from '../records/enqueue-confirmation.js';

/**
 * How to reach Redis: a URL (`redis://user:pass@host:6379/0`, `rediss://` for
 * TLS), ioredis options, or a ready ioredis instance: a `Redis`, or a
 * `Cluster` for Redis Cluster. Threadmill opens and closes the connections it
 * creates; an instance you pass in stays yours to close (Threadmill still
 * opens its own blocking connections from it). Give your instance
 * `enableOfflineQueue: false` so no command is buffered during an outage.
 */
export type RedisConnection = string | RedisOptions | Redis | Cluster;

/** Options of `ThreadmillModule.forRoot()`. Every field is optional. */
export interface ThreadmillModuleOptions {
  /**
   * Name of this backend in the application, for an application with several
   * (`'critical'` beside the default one): its `TaskQueue` is injected with
   * `@InjectTaskQueue(name)`, its tasks declare `@Task({ backend: name })`
   * and its worker is `new ThreadmillServer({ backend: name })`. Two modules
   * of one name fail the boot. The name is the application's; `alias` is
   * the keyspace's in Redis, and defaults to the name.
   * @defaultValue `'default'`: the default backend, injected as `TaskQueue`
   */
  name?: string;
  /**
   * Where Redis is.
   * @defaultValue `'redis://localhost:6379'`
   */
  connection?: RedisConnection;
  /**
   * Name of this backend's keyspace. All keys live under `threadmill:{alias}:`,
   * one hash tag, so every script is single-slot in Redis Cluster. Every
   * application that shares the backend (producers, workers, inspectors) must
   * use the same alias.
   * @defaultValue the backend's `name` (`'default'` for the default backend)
   */
  alias?: string;
  /**
   * Queues of this backend. Every `@Task()` queue must be listed; a worker
   * consumes all of them unless told `--queues`.
   * @defaultValue `['default']`
   */
  queues?: string[];
  /**
   * How many partitions the backend spreads its runs over: each is a hash
   * tag of its own (`{alias}`, `{alias:p1}`, ...), so a Redis Cluster puts
   * them on different masters and one queue is served by several Redis
   * cores. Priority and FIFO hold within a partition (`partitionKey` keeps
   * runs together); see docs/scale-out.md for what holds across them, and
   * for changing the count on a backend that holds runs. Every process of a
   * backend should use the same count (a mismatch is reported).
   * @defaultValue `1`: one hash tag, exactly the layout of earlier versions
   */
  partitions?: number;
  /**
   * How long a claimed run stays leased without renewal. Workers renew the
   * leases they hold every third of this, so a long task keeps its lease and a
   * killed worker's runs are recovered within this time.
   * @defaultValue `30000`
   */
  leaseTtlMs?: number;
  /**
   * How long a finished run (SUCCESSFUL or FAILED) is kept for `getResult`,
   * in ms after it finished: one number for both outcomes, or one per outcome
   * (`{ successful: 3_600_000, failed: 7 * 86_400_000 }`: failures kept a
   * week, successes an hour; an outcome left out keeps the default). `0`
   * deletes such runs at acknowledgement. A task may set its own
   * (`@Task({ resultTtlMs })`). Pending and quarantined runs never expire.
   * @defaultValue `86400000` (one day) for both outcomes
   */
  resultTtlMs?: ResultTtl;
  /**
   * Rate limits by queue name: at most `max` runs of the queue start in any
   * window of `perMs`, across every worker of every pool
   * (`{ emails: { max: 50, perMs: 1000 } }`). Written to Redis when the
   * application boots (so the last application to boot wins, and
   * `TaskInspector.setRateLimit` changes them until then); a queue left out
   * keeps whatever limit Redis holds. See `docs/rate-limits.md`.
   * @defaultValue `{}` (no limit written)
   */
  rateLimits?: Record<string, RateLimit>;
  /**
   * Concurrency caps by queue name: at most this many runs of the queue are
   * leased (running, or held by a worker about to start them) at once,
   * across every worker of every pool (`{ payments: 5 }`). Written to Redis
   * when the application boots, like `rateLimits` (the last application to
   * boot wins; `TaskInspector.setConcurrencyCap` changes a cap until then);
   * a queue left out keeps whatever cap Redis holds. See
   * `docs/rate-limits.md`.
   * @defaultValue `{}` (no cap written)
   */
  concurrencyCaps?: Record<string, number>;
  /**
   * Longest pause between two broker passes (promotion of due deferred runs
   * and reaping of expired leases). A newly deferred run wakes the broker early.
   * @defaultValue `1000`
   */
  brokerIntervalMs?: number;
  /**
   * Most runs moved per script call by claims, acknowledgements, promotion,
   * the reaper and result trimming: a cap (a claim takes what the process
   * has room for; an acknowledgement, what finished meanwhile).
   * @defaultValue `300`
   */
  batchSize?: number;
  /**
   * How long to wait for Redis when it does not answer: at boot (then the
   * boot fails), and for each enqueue or read during an outage (then it
   * throws `RedisUnavailableError`; nothing is buffered beyond this wait).
   * @defaultValue `10000`
   */
  connectTimeoutMs?: number;
  /**
   * Confirm each store with the master's replicas: an enqueue (`enqueue`,
   * `enqueueMany`, a `ThreadmillClient`'s `emit` and `send`) resolves only
   * once `replicas` replicas of the Redis master that stored its runs
   * acknowledged them (Redis's `WAIT`), so that a failover cannot lose a run
   * it confirmed. When fewer acknowledge within `timeoutMs`, it throws
   * `UnconfirmedEnqueueError`: the runs are stored on the master, not
   * undone (enqueue them again with the same `id` to confirm them). Costs a
   * replica round trip per store, shared by concurrent stores; see
   * docs/scale-out.md, "Failover, stated honestly". A boot warns when a
   * master has fewer replicas connected. The testing module ignores it.
   * @defaultValue `false`: an enqueue resolves once the master stored its runs
   */
  confirmEnqueues?: EnqueueConfirmation | false;
  /**
   * Largest encoded run payload (task name and arguments) an enqueue accepts;
   * a larger one throws `InvalidEnqueueError`. Store big data elsewhere and
   * pass a reference.
   * @defaultValue `1048576` (1 MiB)
   */
  maxPayloadBytes?: number;
  /**
   * Lease expiries in a row after which a run is quarantined instead of being
   * retried: it keeps killing (or stalling) its worker.
   * @defaultValue `3`
   */
  maxRecoveries?: number;
  /**
   * Share of Redis's `maxmemory` at which the capacity guard warns: when the
   * memory in use, or the memory projected for the results kept (finish rate
   * × `resultTtlMs` × bytes per run, beyond those kept now), reaches it. The
   * worker's broker logs the warning once per crossing; the inspector, the
   * dashboard and the metrics show the figures.
   * @defaultValue `0.8`
   */
  memoryWarningRatio?: number;
  /**
   * Least time between two reads of Redis's memory by the capacity guard
   * (one `INFO memory`, the counts and the per-minute buckets). It reads
   * after broker passes, in the process that runs the broker: an idle pool's
   * broker, and so the guard, sends Redis nothing for up to a minute.
   * @defaultValue `5000`
   */
  memoryCheckIntervalMs?: number;
  /**
   * How each attempt's OpenTelemetry span relates to the span that enqueued
   * the run (whose context the run carries): `false` makes it a child, in the
   * producer's trace; `true` makes it the root of a trace of its own, linked
   * to the producer's span (for runs that outlive their request by far, or
   * fan out widely). Spans exist only when the application registers an
   * OpenTelemetry SDK (docs/observing.md, "Tracing").
   * @defaultValue `false`
   */
  traceLinks?: boolean;
  /**
   * Start even though Redis's `maxmemory-policy` may evict keys. Eviction
   * silently deletes task runs; only set this for throwaway data.
   * @defaultValue `false`: the boot fails unless the policy is `noeviction`
   */
  allowEviction?: boolean;
  /**
   * Register the module globally, so `TaskQueue` is injectable everywhere.
   * @defaultValue `true`
   */
  isGlobal?: boolean;
}

/** The validated options with every default applied; what Threadmill's internals inject. */
export type ThreadmillOptions = Required<Omit<ThreadmillModuleOptions, 'isGlobal'>>;
