import { ArrayUnique, IsArray, IsBoolean, IsInt, IsOptional, Matches, Min } from 'class-validator';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import { validateSchema } from '../options/validate-schema.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { LOG_SUMMARY_INTERVAL_MS } from '../worker/stale-acknowledgement-summary.js';
import type { WorkerRole, WorkerSettings } from '../worker/worker-options.interface.js';

/**
 * Options of a {@link ThreadmillServer}: how its worker consumes. The
 * backend (Redis, queues, leases, result TTL) is the application's
 * `ThreadmillModule`'s, configured once in `forRoot`/`forRootAsync`.
 */
export interface ThreadmillServerOptions {
  /**
   * The backend to consume: the `name` of one of the application's
   * `ThreadmillModule`s. A server consumes one backend; an application
   * connects one server per backend to consume several.
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Queues to consume.
   * @defaultValue every queue of the module
   */
  queues?: string[];
  /**
   * Attempts running at once (async slots).
   * @defaultValue `10`
   */
  concurrency?: number;
  /**
   * Runs held beyond the free slots, so a freed slot starts the next run
   * without a round trip. Prefetched runs are leased but not started; a
   * closing server hands them back at once. Given, it is fixed; left out, it
   * follows the drain: 2 while runs are slow, more (up to four times the
   * concurrency, at most 1,000) while they finish fast.
   * @defaultValue adaptive, at least `2`
   */
  prefetch?: number;
  /**
   * How long `close()` waits for running attempts before it stops hard (the
   * reaper then recovers them).
   * @defaultValue `30000`
   */
  shutdownTimeoutMs?: number;
  /**
   * Also promote due deferred runs and reap expired leases. Every server may
   * (the broker's scripts are atomic); turn it off where another process of
   * the deployment does it.
   * @defaultValue `true`
   */
  broker?: boolean;
  /**
   * Stop consuming once the queues hold no ready, deferred or running run
   * (the `ended` promise then resolves `'empty'`).
   * @defaultValue `false`
   */
  exitEmpty?: boolean;
  /**
   * Stop consuming after this many runs (`ended` resolves `'max-tasks'`); 0 never.
   * @defaultValue `0`
   */
  maxTasks?: number;
  /**
   * One full garbage collection after boot, before the first claim (see
   * `WorkerOptions.bootGc`).
   * @defaultValue `true`
   */
  bootGc?: boolean;
  /**
   * How often the worker logs its summary of stale acknowledgements (late
   * results of runs cancelled while they ran, attempts whose lease expired),
   * which it counts rather than logs one by one: at most one line per
   * interval, and what is left when it stops.
   * @defaultValue `60000`
   */
  logSummaryIntervalMs?: number;
}

/** The validation rules of {@link ThreadmillServerOptions}, defaults as initial values. */
class ThreadmillServerOptionsSchema {
  @Matches(NAME_PATTERN, { message: 'backend must be 1-64 characters of letters, digits, "_", "." or "-"' })
  backend = DEFAULT_BACKEND;

  @IsArray()
  @ArrayUnique()
  @Matches(NAME_PATTERN, {
    each: true,
    message: 'each queue name must be 1-64 characters of letters, digits, "_", "." or "-"',
  })
  queues: string[] = [];

  @IsInt()
  @Min(1)
  concurrency = 10;

  @IsOptional()
  @IsInt()
  @Min(0)
  prefetch?: number;

  @IsInt()
  @Min(0)
  shutdownTimeoutMs = 30_000;

  @IsBoolean()
  broker = true;

  @IsBoolean()
  exitEmpty = false;

  @IsInt()
  @Min(0)
  maxTasks = 0;

  @IsBoolean()
  bootGc = true;

  @IsInt()
  @Min(1)
  logSummaryIntervalMs = LOG_SUMMARY_INTERVAL_MS;
}

/** Options of the module, which a server does not take. */
const MODULE_OPTIONS = new Set([
  'connection',
  'alias',
  'leaseTtlMs',
  'resultTtlMs',
  'brokerIntervalMs',
  'batchSize',
  'connectTimeoutMs',
  'maxPayloadBytes',
  'maxRecoveries',
  'memoryWarningRatio',
  'memoryCheckIntervalMs',
  'allowEviction',
  'isGlobal',
]);

const SITE = 'new ThreadmillServer()';

function checkNoBackendOptions(raw: ThreadmillServerOptions | undefined, site: string): void {
  const backendFields =
    raw !== null && typeof raw === 'object' ? Object.keys(raw).filter((key) => MODULE_OPTIONS.has(key)) : [];
  if (backendFields.length > 0) {
    throw new ThreadmillConfigError(
      backendFields.map(
        (key) =>
          `${key}: a backend option; set it in ThreadmillModule.forRoot() / forRootAsync() of the application, ` +
          'which the server serves (it takes only how its worker consumes)',
      ),
      site,
    );
  }
}

/**
 * Checks server options without applying defaults (a layer of settings that
 * a higher one may override).
 * @returns the options without their undefined fields
 * @throws ThreadmillConfigError listing every bad field
 */
export function validateServerOptions(raw: ThreadmillServerOptions, site: string): ThreadmillServerOptions {
  checkNoBackendOptions(raw, site);
  validateSchema(new ThreadmillServerOptionsSchema(), raw, site);
  return layerServerOptions(raw);
}

/** Server options layered, lowest first: a field a layer leaves undefined keeps the one below. */
export function layerServerOptions(
  ...layers: readonly (ThreadmillServerOptions | undefined)[]
): ThreadmillServerOptions {
  const layered: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) if (value !== undefined) layered[key] = value;
  }
  return layered as ThreadmillServerOptions;
}

/**
 * The worker settings of a server's options (validated, defaults applied).
 * @param role what the worker does in its process (`runWorker` gives its pool's role)
 * @throws ThreadmillConfigError listing every bad field
 */
export function serverSettings(
  raw: ThreadmillServerOptions | undefined,
  role?: WorkerRole,
  site = SITE,
): WorkerSettings & { readonly backend: string } {
  checkNoBackendOptions(raw, site);
  const options = validateSchema(new ThreadmillServerOptionsSchema(), raw, site);
  return {
    backend: options.backend,
    queues: options.queues,
    concurrency: options.concurrency,
    prefetch: options.prefetch,
    exitEmpty: options.exitEmpty,
    shutdownTimeoutMs: options.shutdownTimeoutMs,
    bootGc: options.bootGc,
    logSummaryIntervalMs: options.logSummaryIntervalMs,
    role: role ?? { consume: true, broker: options.broker, slot: 0, maxTasks: options.maxTasks },
  };
}
