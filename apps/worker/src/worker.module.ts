import { Module } from '@nestjs/common';
import { DEMO_QUEUES, DemoTasksModule } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';

/** The worker application: Threadmill plus the modules whose tasks it runs. */
@Module({
  imports: [
    ThreadmillModule.forRoot({
      connection: process.env['REDIS_URL'] ?? 'redis://localhost:6379',
      alias: process.env['THREADMILL_ALIAS'] ?? 'default',
      queues: DEMO_QUEUES,
    }),
    DemoTasksModule,
  ],
})
export class WorkerModule {}
