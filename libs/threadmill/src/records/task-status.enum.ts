/** Where a task run is in its life. */
export enum TaskStatus {
  /**
   * A flow node whose dependencies have not all settled (`docs/flows.md`):
   * in no queue's segment yet; READY once they settle as its edges say.
   */
  WAITING = 'WAITING',
  /** Waiting to be claimed: ready now, or deferred until `runAfter`. */
  READY = 'READY',
  /** Leased by a worker that is running (or about to run) it. */
  RUNNING = 'RUNNING',
  /** Finished without error; `returnValue` holds what the task returned. */
  SUCCESSFUL = 'SUCCESSFUL',
  /** Finished with an error its retry policy did not retry; see `errors`. */
  FAILED = 'FAILED',
  /**
   * Set aside because it cannot be executed as stored (unreadable payload,
   * unknown task, invalid arguments, a retry policy that throws, or a run that
   * keeps killing its worker); see `quarantine`. Kept until requeued.
   */
  QUARANTINED = 'QUARANTINED',
  /**
   * Cancelled (`TaskQueue.cancel`) while pending or running: withdrawn, or its
   * attempt aborted with `CancelledError` and its outcome discarded. Not
   * retried; kept like a failure (the failed `resultTtlMs`), and requeue-able.
   */
  CANCELLED = 'CANCELLED',
}
