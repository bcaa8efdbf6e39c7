import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';
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
 */
@Module({
  imports: [
    ThreadmillModule.forRoot(demoBackendOptions()),
    TasksClientModule,
    ThreadmillDashboardModule.forRoot({ path: '/threadmill', title: 'Threadmill demo' }),
    ThreadmillMetricsModule.forRoot(),
    TerminusModule.forRoot(),
    ThreadmillHealthModule,
  ],
  controllers: [DemoController, HealthController],
  providers: [DemoBatchService],
})
export class DemoAppModule {}
