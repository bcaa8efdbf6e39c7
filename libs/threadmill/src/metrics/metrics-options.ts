import { IsBoolean, IsOptional, Matches, ValidateBy, ValidateIf } from 'class-validator';
import type { Registry } from 'prom-client';
import type { RoutedAsyncOptions } from '../module/routed-async-options.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';

/** Options of `ThreadmillMetricsModule.forRoot`. */
export interface ThreadmillMetricsOptions {
  /**
   * The backend whose runs and queues are reported: the `name` of one of the
   * application's `ThreadmillModule`s. For several, import the module once per
   * backend, each with its own `registry` or `path` (the metric names are the same).
   * @defaultValue `'default'`, the module without a `name`
   */
  backend?: string;
  /**
   * Route of the Prometheus endpoint, or `false` to serve none (when the
   * application already has one: pass its `registry`).
   * @defaultValue `'metrics'`
   */
  path?: string | false;
  /**
   * Where the metrics are registered.
   * @defaultValue prom-client's global `register`, so an existing `/metrics` endpoint shows them too
   */
  registry?: Registry;
  /**
   * Also report backend-wide gauges read from Redis at each scrape: runs per
   * queue and segment, the oldest ready run's age, live workers. Turn it off
   * where another target (the worker pool's `--metrics-port`) reports them.
   * @defaultValue `true`
   */
  queueMetrics?: boolean;
  /**
   * Also collect prom-client's default Node.js process metrics (CPU, memory, event loop lag).
   * @defaultValue `false`
   */
  defaultMetrics?: boolean;
}

/**
 * Options of `ThreadmillMetricsModule.forRootAsync`: `path` (default
 * `'metrics'`, or `false`) beside the factory, `registry`, `queueMetrics` and
 * `defaultMetrics` from it.
 */
export type ThreadmillMetricsAsyncOptions = RoutedAsyncOptions<ThreadmillMetricsOptions>;

/** The validation rules of {@link ThreadmillMetricsOptions}, with the defaults as initial values. */
export class ThreadmillMetricsOptionsSchema {
  @Matches(NAME_PATTERN, {
    message: 'backend must be the name of a ThreadmillModule (1-64 letters, digits, "_", "." or "-")',
  })
  backend = DEFAULT_BACKEND;

  @ValidateIf((_, value) => value !== false)
  @Matches(/^\/?[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*$/, {
    message: 'path must be a route such as "metrics" or "internal/metrics" (letters, digits, "_", "-"), or false',
  })
  path: string | false = 'metrics';

  @IsOptional()
  @ValidateBy({
    name: 'isRegistry',
    validator: {
      // Duck-typed: the application's prom-client may be another copy than ours.
      validate: (value: unknown) =>
        typeof (value as Registry | null)?.metrics === 'function' &&
        typeof (value as Registry | null)?.registerMetric === 'function',
      defaultMessage: () => 'registry must be a prom-client Registry',
    },
  })
  registry?: Registry;

  @IsBoolean()
  queueMetrics = true;

  @IsBoolean()
  defaultMetrics = false;
}
