import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { collectDefaultMetrics, type Registry } from 'prom-client';
import { inspectorOf, runEventsOf } from '../module/backend-lookup.js';
import { THREADMILL_METRICS_OPTIONS, THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';
import type { ThreadmillMetricsOptionsSchema } from './metrics-options.js';
import { QueueMetrics } from './queue-metrics.js';
import { RunMetrics } from './run-metrics.js';

/**
 * Registers the Threadmill metrics of an application's backend (its
 * `backend` option) and feeds them from its run events; removes them again when the application closes, so a registry
 * shared with the rest of the application (the global one) can host the
 * next instance, as tests do.
 */
@Injectable()
export class MetricsRecorder implements OnModuleInit, OnModuleDestroy {
  private unsubscribe: (() => void) | undefined;
  private registered: string[] = [];

  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(THREADMILL_METRICS_REGISTRY) private readonly registry: Registry,
    @Inject(THREADMILL_METRICS_OPTIONS) private readonly options: ThreadmillMetricsOptionsSchema,
  ) {}

  onModuleInit(): void {
    const { registry, options } = this;
    const where = 'ThreadmillMetricsModule.forRoot() / forRootAsync()';
    const events = runEventsOf(this.moduleRef, options.backend, where);
    const inspector = inspectorOf(this.moduleRef, options.backend, where);
    const before = new Set(registry.getMetricsAsArray().map((metric) => metric.name));
    this.unsubscribe = events.subscribe(new RunMetrics(registry));
    if (options.queueMetrics) QueueMetrics.register(inspector, registry);
    if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
    this.registered = registry
      .getMetricsAsArray()
      .map((metric) => metric.name)
      .filter((name) => !before.has(name));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
    for (const name of this.registered) this.registry.removeSingleMetric(name);
  }
}
