import type { LeasedRun, Outcome } from '../backend/task-backend.js';
import type { StaleReason } from '../events/run-events.js';
import { overriddenTtl } from '../records/result-ttl.js';
import type { PendingAcknowledgement } from './acknowledger.js';
import type { Attempt } from './task-executor.js';

/** Who is told when an attempt's acknowledgement settled: its consumer, with the lease it held. */
export interface AttemptSettler<L extends { readonly run: LeasedRun }> {
  settled(lease: L, attempt: Attempt, durationMs: number | undefined, applied: boolean): void;
}

/**
 * The acknowledgement of one attempt, which tells its consumer when it
 * settled. Id, queue, token and outcome are read from the run and the
 * attempt, not copied: a worker acknowledges thousands a second.
 */
export class AttemptAcknowledgement<
  L extends { readonly run: LeasedRun; readonly staleReason?: StaleReason },
> implements PendingAcknowledgement {
  constructor(
    private readonly consumer: AttemptSettler<L>,
    private readonly lease: L,
    private readonly attempt: Attempt,
    private readonly durationMs: number | undefined,
  ) {}

  get id(): string {
    return this.lease.run.id;
  }

  get queue(): string {
    return this.lease.run.queue;
  }

  get token(): string {
    return this.lease.run.token;
  }

  get outcome(): Outcome {
    return this.attempt.outcome;
  }

  get resultTtlMs(): number | undefined {
    const { resultTtlMs } = this.attempt;
    return resultTtlMs === undefined ? undefined : overriddenTtl(resultTtlMs, this.attempt.outcome.kind);
  }

  staleReason(): StaleReason {
    return this.lease.staleReason ?? 'expired';
  }

  settled(applied: boolean): void {
    this.consumer.settled(this.lease, this.attempt, this.durationMs, applied);
  }
}
