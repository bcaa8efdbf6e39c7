import { ThreadmillError } from './threadmill.error.js';

/** An enqueue request is invalid (options or arguments); nothing was written to Redis. */
export class InvalidEnqueueError extends ThreadmillError {
  constructor(
    readonly task: string,
    readonly problem: string,
  ) {
    super(`Cannot enqueue "${task}": ${problem} Nothing was enqueued.`);
  }
}
