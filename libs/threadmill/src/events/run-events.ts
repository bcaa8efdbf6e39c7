import { Logger } from '@nestjs/common';
import type { Outcome } from '../backend/task-backend.js';
import type { QuarantineReason } from '../records/task-result.js';

/** An attempt that starts: its task's code is about to run. */
export interface StartedRun {
  readonly id: string;
  readonly queue: string;
  readonly task: string;
  /** 1 for the run's first attempt. */
  readonly attempt: number;
}

/** What became of an attempt, or of a run whose lease expired, once Redis applied it. */
export interface SettledRun {
  readonly id: string;
  /** The attempt settled (for the reaper, the one whose lease expired). */
  readonly attempt: number;
  readonly queue: string;
  /** The task's name, or `undefined` when the stored payload could not be read. */
  readonly task: string | undefined;
  readonly outcome: Outcome['kind'];
  /** Why the run was quarantined, for the outcome `quarantine`. */
  readonly reason?: QuarantineReason;
  /** How long the attempt ran, ms; absent when the reaper settled the run (its lease expired). */
  readonly durationMs?: number;
  /** A worker's attempt, or the reaper settling an expired lease. */
  readonly source: 'worker' | 'reaper';
}

/** A flow that was stored (`TaskQueue.enqueueFlow`, `enqueueChain`, `enqueueBatch`). */
export interface EnqueuedFlowEvent {
  readonly id: string;
  /** How many nodes (runs) it has; each is also reported to {@link RunListener.enqueued}. */
  readonly nodes: number;
}

/**
 * Why Redis discarded an acknowledgement as stale: `revoked` when its lease
 * was taken from a live attempt (its run was cancelled, or purged, while it
 * ran: expected), `expired` when the lease ran out before the outcome
 * arrived (its worker stalled or lost Redis; the reaper recovers the run).
 */
export type StaleReason = 'revoked' | 'expired';

/**
 * Receives what Threadmill does in this process: the Prometheus metrics are
 * one listener, an application's own tracing can be another. Every method is
 * optional and is called synchronously on the hot path, so keep it cheap.
 */
export interface RunListener {
  /** `count` runs of `task` were stored in `queue` (duplicates of an idempotent id are not). */
  enqueued?(queue: string, task: string, count: number): void;
  /** A flow was stored by this process (its nodes are reported to `enqueued` as well). */
  flowEnqueued?(flow: EnqueuedFlowEvent): void;
  /** An attempt starts in this process (its task's code runs next). */
  started?(run: StartedRun): void;
  /** A run's outcome was applied in Redis. */
  settled?(run: SettledRun): void;
  /** One renewal pass: leases extended, and leases found lost (their attempt is aborted). */
  leasesRenewed?(renewed: number, lost: number): void;
  /** `count` acknowledgements Redis discarded because their lease no longer held, for `reason`. */
  staleAcknowledgements?(count: number, reason: StaleReason): void;
}

/**
 * The process's run events, fanned out to the subscribed {@link RunListener}s.
 * With no listener each event costs one length check: the hot path pays for
 * telemetry only when someone listens. A listener that throws is logged and
 * never disturbs the run.
 */
export class RunEvents {
  private listeners: readonly RunListener[] = [];
  private readonly logger = new Logger('Threadmill');

  /** Whether anyone listens: lets callers skip measuring what nobody reads. */
  get active(): boolean {
    return this.listeners.length > 0;
  }

  /** Adds `listener`; returns the function that removes it. */
  subscribe(listener: RunListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  enqueued(queue: string, task: string, count: number): void {
    if (this.listeners.length > 0) this.emit((l) => l.enqueued?.(queue, task, count));
  }

  flowEnqueued(flow: EnqueuedFlowEvent): void {
    if (this.listeners.length > 0) this.emit((l) => l.flowEnqueued?.(flow));
  }

  started(run: StartedRun): void {
    if (this.listeners.length > 0) this.emit((l) => l.started?.(run));
  }

  settled(run: SettledRun): void {
    if (this.listeners.length > 0) this.emit((l) => l.settled?.(run));
  }

  leasesRenewed(renewed: number, lost: number): void {
    if (this.listeners.length > 0) this.emit((l) => l.leasesRenewed?.(renewed, lost));
  }

  staleAcknowledgements(count: number, reason: StaleReason): void {
    if (this.listeners.length > 0) this.emit((l) => l.staleAcknowledgements?.(count, reason));
  }

  private emit(call: (listener: RunListener) => void): void {
    for (const listener of this.listeners) {
      try {
        call(listener);
      } catch (error) {
        this.logger.warn(`A run listener threw (ignored): ${(error as Error).message}`);
      }
    }
  }
}
