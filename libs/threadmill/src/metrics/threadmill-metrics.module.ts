import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { register } from 'prom-client';
import { validateSchema } from '../module/validate-schema.js';
import { THREADMILL_METRICS_OPTIONS, THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';
import { metricsController } from './metrics.controller.js';
import {
  ThreadmillMetricsOptionsSchema,
  type ThreadmillMetricsAsyncOptions,
  type ThreadmillMetricsOptions,
} from './metrics-options.js';
import { MetricsRecorder } from './metrics-recorder.js';

/**
 * Prometheus metrics of an application that uses Threadmill (an HTTP app that
 * enqueues, typically): the runs it enqueued by queue and task, and the
 * backend-wide queue gauges read from Redis at scrape time. Served at
 * `/metrics` unless `path` says otherwise. Worker pools serve their own with
 * `--metrics-port`. Needs `prom-client` installed and `ThreadmillModule`
 * imported.
 *
 * @example
 * ```ts
 * @Module({ imports: [ThreadmillModule.forRoot(), ThreadmillMetricsModule.forRoot()] })
 * export class AppModule {}
 * ```
 */
@Module({})
export class ThreadmillMetricsModule {
  /** @throws ThreadmillConfigError for invalid options, naming each bad field */
  static forRoot(options: ThreadmillMetricsOptions = {}): DynamicModule {
    const resolved = validateSchema(new ThreadmillMetricsOptionsSchema(), options, 'ThreadmillMetricsModule.forRoot()');
    return this.assemble(resolved.path, [
      { provide: THREADMILL_METRICS_OPTIONS, useValue: resolved },
      { provide: THREADMILL_METRICS_REGISTRY, useValue: resolved.registry ?? register },
    ]);
  }

  /**
   * Serves the endpoint at `path`, with `registry`, `queueMetrics` and
   * `defaultMetrics` from a factory.
   * @throws ThreadmillConfigError for an invalid `path` at once; for the
   *   factory's options when the application boots
   */
  static forRootAsync(options: ThreadmillMetricsAsyncOptions): DynamicModule {
    const where = 'ThreadmillMetricsModule.forRootAsync()';
    if (typeof options?.useFactory !== 'function') {
      throw new ThreadmillConfigError(['useFactory: must be a function returning the metrics options'], where);
    }
    const { path } = validateSchema(new ThreadmillMetricsOptionsSchema(), { path: options.path }, where);
    return this.assemble(
      path,
      [
        {
          provide: THREADMILL_METRICS_OPTIONS,
          inject: options.inject ?? [],
          useFactory: async (...args: unknown[]) => {
            const given: unknown = await options.useFactory(...args);
            if (given && typeof given === 'object' && 'path' in given) {
              throw new ThreadmillConfigError(
                ['path: the factory cannot set it (routes exist before providers); give it beside useFactory'],
                where,
              );
            }
            return validateSchema(new ThreadmillMetricsOptionsSchema(), { ...(given as object), path }, where);
          },
        },
        {
          provide: THREADMILL_METRICS_REGISTRY,
          inject: [THREADMILL_METRICS_OPTIONS],
          useFactory: (resolved: ThreadmillMetricsOptionsSchema) => resolved.registry ?? register,
        },
      ],
      options.imports,
    );
  }

  private static assemble(
    path: string | false,
    providers: Provider[],
    imports: NonNullable<DynamicModule['imports']> = [],
  ): DynamicModule {
    return {
      module: ThreadmillMetricsModule,
      imports,
      controllers: path === false ? [] : [metricsController(path)],
      providers: [...providers, MetricsRecorder],
      exports: [THREADMILL_METRICS_REGISTRY],
    };
  }
}
