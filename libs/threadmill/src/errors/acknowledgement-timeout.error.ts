import { ThreadmillError } from './threadmill.error.js';

/**
 * The error an attempt is recorded with when its lease expired before it was
 * acknowledged: the worker died, hung, or lost its connection to Redis. The
 * run's retry policy receives it like any other error.
 */
export class AcknowledgementTimeoutError extends ThreadmillError {
  constructor(
    readonly runId: string,
    readonly taskName: string,
    readonly workerId: string | undefined,
  ) {
    super(
      `Lease of run ${runId} (${taskName}) expired before it was acknowledged` +
        (workerId ? ` by worker ${workerId}` : '') +
        `: the worker died, stalled, or lost Redis. If the task legitimately runs long, ` +
        `raise its leaseTtlMs.`,
    );
  }
}
