import { ThreadmillError } from './threadmill.error.js';

/** `getResult(id)` found no run with that id. */
export class TaskResultNotFoundError extends ThreadmillError {
  constructor(readonly id: string) {
    super(
      `No task run with id "${id}": it was never enqueued on this backend, or it finished ` +
        `and its result expired (resultTtlMs). Check the id and the backend alias.`,
    );
  }
}
