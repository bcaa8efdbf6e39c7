import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillExceptionFilter, ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillDashboardModule } from '@threadmill/nestjs/dashboard';
import { ThreadmillHealthModule } from '@threadmill/nestjs/health';
import { ThreadmillMetricsModule } from '@threadmill/nestjs/metrics';
import { DemoBatchService } from './demo-batch.service.js';
import { DemoController } from './demo.controller.js';
import { HealthController } from './health.controller.js';
import { TasksClientModule } from './tasks-client.js';

/**
 * The demo API: a producer app that enqueues the demo's tasks through their
 * contracts (it imports none of the worker's providers), asks the worker's
 * quote handler through a `ThreadmillClient`, and serves the dashboard at
 * /threadmill, Prometheus metrics at /metrics and health checks at /health.
 * Threadmill's errors reach HTTP clients through ThreadmillExceptionFilter.
 */
@Module({
  imports: [
    // An enqueue during a Redis outage waits at most 2 s (then 503), not the default 10 s.
    ThreadmillModule.forRoot({ ...demoBackendOptions(), connectTimeoutMs: 2_000 }),
    TasksClientModule,
    ThreadmillDashboardModule.forRoot({ path: '/threadmill', title: 'Threadmill demo' }),
    ThreadmillMetricsModule.forRoot(),
    TerminusModule.forRoot(),
    ThreadmillHealthModule,
  ],
  controllers: [DemoController, HealthController],
  // Threadmill's errors answer as 404, 400, 503 and 504 rather than 500.
  providers: [DemoBatchService, { provide: APP_FILTER, useClass: ThreadmillExceptionFilter }],
})
export class DemoAppModule {}
