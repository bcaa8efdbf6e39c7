/**
 * The pool of `tools/schedules-scale.ts`: `runWorker --workers 1` on queue
 * `bench` of REDIS_URL; its supervisor runs the broker, and so the schedules.
 */
import { runWorker } from '@threadmill/nestjs';
import { schedulesApp } from './schedules-app.js';

await runWorker(schedulesApp(process.env['REDIS_URL']!), {
  argv: ['--workers', '1', '--queues', 'bench', '--concurrency', '10'],
});
