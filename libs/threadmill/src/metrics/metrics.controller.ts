import { Controller, Get, Header, Inject, Res, type Type } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';

/**
 * The Prometheus endpoint's controller, at `path`. Nest reads a controller's
 * route from its decorator, so a configurable route needs a class per module
 * instance. Its content type is the registry's (text or OpenMetrics), read at
 * each scrape since `forRootAsync` resolves the registry after routes exist.
 */
export function metricsController(path: string): Type {
  @Controller(path)
  class ThreadmillMetricsController {
    constructor(@Inject(THREADMILL_METRICS_REGISTRY) private readonly registry: Registry) {}

    @Get()
    @Header('Cache-Control', 'no-store')
    scrape(@Res({ passthrough: true }) response: { header(name: string, value: string): unknown }): Promise<string> {
      // Express's response and Fastify's reply both have header().
      response.header('Content-Type', this.registry.contentType);
      return this.registry.metrics();
    }
  }
  return ThreadmillMetricsController;
}
