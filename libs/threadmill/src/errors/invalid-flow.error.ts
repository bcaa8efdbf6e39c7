import { ThreadmillError } from './threadmill.error.js';

/** A flow (`TaskQueue.enqueueFlow`, `enqueueChain`, `enqueueBatch`) is invalid; nothing was written to Redis. */
export class InvalidFlowError extends ThreadmillError {
  constructor(readonly problem: string) {
    super(`Cannot enqueue the flow: ${problem} Nothing was enqueued (docs: "Flows").`);
  }
}
