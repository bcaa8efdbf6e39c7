import { Controller, Get, Header, Inject, type Type } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';

/**
 * The Prometheus endpoint's controller, at `path`. Nest reads a controller's
 * route from its decorator, so a configurable route needs a class per module
 * instance; its content type is the registry's (text or OpenMetrics).
 */
export function metricsController(path: string, contentType: string): Type {
  @Controller(path)
  class ThreadmillMetricsController {
    constructor(@Inject(THREADMILL_METRICS_REGISTRY) private readonly registry: Registry) {}

    @Get()
    @Header('Content-Type', contentType)
    @Header('Cache-Control', 'no-store')
    scrape(): Promise<string> {
      return this.registry.metrics();
    }
  }
  return ThreadmillMetricsController;
}
