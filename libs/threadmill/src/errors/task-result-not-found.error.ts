import { ThreadmillError } from './threadmill.error.js';

/** `getResult(id)` or `waitFor(id)` found no run with that id. */
export class TaskResultNotFoundError extends ThreadmillError {
  /**
   * @param reason why the run is gone, when that is known (it was dequeued
   *   or purged while somebody waited for it)
   */
  constructor(
    readonly id: string,
    readonly reason?: string,
  ) {
    super(
      reason
        ? `No task run with id "${id}": ${reason}.`
        : `No task run with id "${id}": it was never enqueued on this backend, or it finished ` +
            `and its result expired (resultTtlMs). Check the id and the backend alias.`,
    );
  }
}
