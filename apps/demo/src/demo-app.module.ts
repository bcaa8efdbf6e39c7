import { Module } from '@nestjs/common';
import { DEMO_QUEUES, DemoTasksModule } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';
import { DemoBatchService } from './demo-batch.service.js';
import { DemoController } from './demo.controller.js';

/** The demo API: a producer app that enqueues the demo's tasks. */
@Module({
  imports: [
    ThreadmillModule.forRoot({
      connection: process.env['REDIS_URL'] ?? 'redis://localhost:6379',
      alias: process.env['THREADMILL_ALIAS'] ?? 'default',
      queues: DEMO_QUEUES,
    }),
    DemoTasksModule,
  ],
  controllers: [DemoController],
  providers: [DemoBatchService],
})
export class DemoAppModule {}
