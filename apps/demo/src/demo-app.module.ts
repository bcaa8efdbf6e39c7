import { Module } from '@nestjs/common';
import { DemoTasksModule, demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';
import { DemoBatchService } from './demo-batch.service.js';
import { DemoController } from './demo.controller.js';

/** The demo API: a producer app that enqueues the demo's tasks. */
@Module({
  imports: [ThreadmillModule.forRoot(demoBackendOptions()), DemoTasksModule],
  controllers: [DemoController],
  providers: [DemoBatchService],
})
export class DemoAppModule {}
