import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { register } from 'prom-client';
import { routedAsyncOptions } from '../module/routed-async-options.js';
import { validateSchema } from '../options/validate-schema.js';
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
    const validate = (raw: ThreadmillMetricsOptions) =>
      validateSchema(new ThreadmillMetricsOptionsSchema(), raw, where);
    const { path, provider } = routedAsyncOptions(options, THREADMILL_METRICS_OPTIONS, validate, where);
    return this.assemble(
      path,
      [
        provider,
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
