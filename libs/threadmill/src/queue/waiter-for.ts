import { PartitionedTaskBackend } from '../backend/partitioned/partitioned.backend.js';
import type { TaskBackend } from '../backend/task-backend.js';
import { PartitionedRunWaiter } from './partitioned-run-waiter.js';
import { RunWaiter } from './run-waiter.js';
import type { Waiter } from './waiter.js';

/** The waiter of a backend: one feed of finished runs, or one per partition of a partitioned backend. */
export function waiterFor(backend: TaskBackend): Waiter {
  return backend instanceof PartitionedTaskBackend ? new PartitionedRunWaiter(backend) : new RunWaiter(backend);
}
