import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { InvalidEnqueueError } from './invalid-enqueue.error.js';

/** How to inject the `TaskQueue` of backend `name`. */
const injection = (name: string) =>
  name === DEFAULT_BACKEND ? '`TaskQueue` (or @InjectTaskQueue())' : `@InjectTaskQueue('${name}')`;

/**
 * A task was enqueued through the `TaskQueue` of a backend it does not
 * belong to (`@Task({ backend })`, a contract's `backend`): its runs would
 * land in another Redis keyspace than the one its worker consumes. Nothing
 * was written.
 */
export class WrongBackendError extends InvalidEnqueueError {
  constructor(
    task: string,
    /** The backend the task belongs to. */
    readonly taskBackend: string,
    /** The backend of the `TaskQueue` it was enqueued through. */
    readonly queueBackend: string,
  ) {
    super(
      task,
      `it belongs to backend "${taskBackend}", but this TaskQueue is backend "${queueBackend}"'s. ` +
        `Enqueue it through backend "${taskBackend}"'s queue: inject ${injection(taskBackend)}.`,
    );
  }
}
