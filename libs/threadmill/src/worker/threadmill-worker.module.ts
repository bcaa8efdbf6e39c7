import { Module, type DynamicModule } from '@nestjs/common';
import { THREADMILL_WORKER_OPTIONS } from '../threadmill.constants.js';
import { TaskExecutor } from './task-executor.js';
import type { WorkerSettings } from './worker-options.interface.js';
import { WorkerService } from './worker.service.js';

/**
 * The worker side of Threadmill (consumer, broker, reaper). `runWorker`
 * imports it next to the application's module; producer-only apps never load it.
 */
@Module({})
export class ThreadmillWorkerModule {
  static register(settings: WorkerSettings): DynamicModule {
    return {
      module: ThreadmillWorkerModule,
      providers: [{ provide: THREADMILL_WORKER_OPTIONS, useValue: settings }, TaskExecutor, WorkerService],
      exports: [WorkerService],
    };
  }
}
