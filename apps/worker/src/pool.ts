import { runWorker } from '@threadmill/nestjs';
import { WorkerModule } from './worker.module.js';

// The worker application as a process pool: a supervisor runs the broker and
// keeps --workers processes of this script alive, each a Nest microservice
// served by a ThreadmillServer (flags: `node dist/apps/worker/pool.js --help`).
await runWorker(WorkerModule);
