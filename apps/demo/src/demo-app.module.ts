import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DemoTasksModule, demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillDashboardModule } from '@threadmill/nestjs/dashboard';
import { ThreadmillHealthModule } from '@threadmill/nestjs/health';
import { ThreadmillMetricsModule } from '@threadmill/nestjs/metrics';
import { DemoBatchService } from './demo-batch.service.js';
import { DemoController } from './demo.controller.js';
import { HealthController } from './health.controller.js';

/**
 * The demo API: a producer app that enqueues the demo's tasks, with the
 * dashboard at /threadmill, Prometheus metrics at /metrics and health checks
 * at /health.
 */
@Module({
  imports: [
    ThreadmillModule.forRoot(demoBackendOptions()),
    DemoTasksModule,
    ThreadmillDashboardModule.forRoot({ path: '/threadmill', title: 'Threadmill demo' }),
    ThreadmillMetricsModule.forRoot(),
    TerminusModule.forRoot(),
    ThreadmillHealthModule,
  ],
  controllers: [DemoController, HealthController],
  providers: [DemoBatchService],
})
export class DemoAppModule {}
