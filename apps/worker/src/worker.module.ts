import { Module } from '@nestjs/common';
import { DemoTasksModule, demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';

/** The worker application: Threadmill plus the modules whose tasks it runs. */
@Module({
  imports: [ThreadmillModule.forRoot(demoBackendOptions()), DemoTasksModule],
})
export class WorkerModule {}
