import { runWorker } from '@threadmill/nestjs';
import { WorkerModule } from './worker.module.js';

await runWorker(WorkerModule);
