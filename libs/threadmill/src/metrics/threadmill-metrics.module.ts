import { Module, type DynamicModule } from '@nestjs/common';
import { register } from 'prom-client';
import { validateSchema } from '../module/validate-schema.js';
import { THREADMILL_METRICS_OPTIONS, THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';
import { metricsController } from './metrics.controller.js';
import { ThreadmillMetricsOptionsSchema, type ThreadmillMetricsOptions } from './metrics-options.js';
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
  static forRoot(options: ThreadmillMetricsOptions = {}): DynamicModule {
    const resolved = validateSchema(new ThreadmillMetricsOptionsSchema(), options, 'ThreadmillMetricsModule.forRoot()');
    const registry = resolved.registry ?? register;
    return {
      module: ThreadmillMetricsModule,
      controllers: resolved.path === false ? [] : [metricsController(resolved.path, registry.contentType)],
      providers: [
        { provide: THREADMILL_METRICS_REGISTRY, useValue: registry },
        { provide: THREADMILL_METRICS_OPTIONS, useValue: resolved },
        MetricsRecorder,
      ],
      exports: [THREADMILL_METRICS_REGISTRY],
    };
  }
}
