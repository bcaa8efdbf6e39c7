import { Module } from '@nestjs/common';
import { DemoWorkerModule, demoBackendOptions } from '@threadmill/demo-tasks';
import { ThreadmillModule } from '@threadmill/nestjs';

/**
 * The worker application: Threadmill plus the modules whose tasks and
 * handlers it serves. `main.ts` runs it as one Nest microservice, `pool.ts`
 * as a pool of them.
 */
@Module({
  imports: [ThreadmillModule.forRoot(demoBackendOptions()), DemoWorkerModule],
})
export class WorkerModule {}
