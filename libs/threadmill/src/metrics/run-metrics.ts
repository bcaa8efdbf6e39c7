import { Counter, Histogram, type Registry } from 'prom-client';
import type { RunListener, SettledRun, StaleReason } from '../events/run-events.js';

/** Label of runs whose stored payload could not be read (their task is unknown). */
const UNREADABLE_TASK = '(unreadable)';

/** Seconds: from a no-op task to a long job, so the histogram shows both ends. */
export const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** The outcome counters of one task on one queue, resolved once: label lookups are the costly part of an increment. */
interface OutcomeCounters {
  readonly succeeded: Counter.Internal;
  readonly failed: Counter.Internal;
  readonly retried: Counter.Internal;
  readonly quarantined: Counter.Internal;
  readonly expired: Counter.Internal;
  readonly duration: Partial<Record<SettledRun['outcome'], Histogram.Internal<'queue' | 'task' | 'outcome'>>>;
}

/**
 * The run counters of one process as Prometheus metrics: runs and flows enqueued,
 * runs succeeded, failed, retried and quarantined by queue and task (and those
 * quarantined because the process does not register their task), attempt
 * durations, lease expiries, renewals and lost leases, stale
 * acknowledgements by reason. A {@link RunListener}: subscribe it to the process's
 * `RunEvents`.
 *
 * Outcomes are counted once Redis applied them, so a discarded (stale)
 * acknowledgement is not counted as a success: the run it belonged to is
 * counted when its recovered attempt settles.
 */
export class RunMetrics implements RunListener {
  private readonly enqueuedTotal: Counter<'queue' | 'task'>;
  private readonly flowsEnqueuedTotal: Counter;
  private readonly succeededTotal: Counter<'queue' | 'task'>;
  private readonly failedTotal: Counter<'queue' | 'task'>;
  private readonly retriedTotal: Counter<'queue' | 'task'>;
  private readonly quarantinedTotal: Counter<'queue' | 'task'>;
  private readonly expiredTotal: Counter<'queue' | 'task'>;
  private readonly unknownTaskTotal: Counter<'queue' | 'task'>;
  private readonly durationSeconds: Histogram<'queue' | 'task' | 'outcome'>;
  private readonly renewalsTotal: Counter;
  private readonly lostTotal: Counter;
  private readonly staleTotal: Counter<'reason'>;
  private readonly enqueuedByTask = new Map<string, Counter.Internal>();
  private readonly outcomesByTask = new Map<string, OutcomeCounters>();

  constructor(registry: Registry) {
    const registers = [registry];
    const labelNames = ['queue', 'task'] as const;
    const counter = (name: string, help: string) => new Counter({ name, help, labelNames, registers });
    this.enqueuedTotal = counter('threadmill_runs_enqueued_total', 'Runs stored by enqueue (not duplicate ids).');
    this.flowsEnqueuedTotal = new Counter({
      name: 'threadmill_flows_enqueued_total',
      help: 'Flows stored by enqueueFlow, enqueueChain and enqueueBatch (their nodes count in threadmill_runs_enqueued_total).',
      registers,
    });
    this.succeededTotal = counter('threadmill_runs_succeeded_total', 'Runs finished SUCCESSFUL.');
    this.failedTotal = counter('threadmill_runs_failed_total', 'Runs finished FAILED (no retry left or allowed).');
    this.retriedTotal = counter('threadmill_runs_retried_total', 'Failed attempts requeued for a retry.');
    this.quarantinedTotal = counter('threadmill_runs_quarantined_total', 'Runs moved to quarantine.');
    this.expiredTotal = counter(
      'threadmill_lease_expiries_total',
      'Runs whose lease expired (worker died or stalled), settled by the reaper.',
    );
    this.unknownTaskTotal = counter(
      'threadmill_unknown_task_runs_total',
      'Runs quarantined because the process that claimed them does not register their task (reason unknown-task).',
    );
    this.durationSeconds = new Histogram({
      name: 'threadmill_run_duration_seconds',
      help: 'How long attempts ran, by outcome (successful, failed, retry, quarantine).',
      labelNames: ['queue', 'task', 'outcome'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.renewalsTotal = new Counter({
      name: 'threadmill_lease_renewals_total',
      help: 'Leases extended by renewal.',
      registers,
    });
    this.lostTotal = new Counter({
      name: 'threadmill_leases_lost_total',
      help: 'Leases found lost at renewal; their attempts were aborted.',
      registers,
    });
    this.staleTotal = new Counter({
      name: 'threadmill_stale_acks_total',
      help:
        'Acknowledgements discarded because their lease no longer held: revoked (run cancelled or purged while it ' +
        'ran) or expired.',
      labelNames: ['reason'],
      registers,
    });
    // Both reasons from 0, so alerts on expiries work from the first one.
    for (const reason of ['revoked', 'expired'] as const) this.staleTotal.labels(reason).inc(0);
  }

  enqueued(queue: string, task: string, count: number): void {
    const key = `${queue}\u0000${task}`;
    let counter = this.enqueuedByTask.get(key);
    if (!counter) this.enqueuedByTask.set(key, (counter = this.enqueuedTotal.labels(queue, task)));
    counter.inc(count);
  }

  flowEnqueued(): void {
    this.flowsEnqueuedTotal.inc();
  }

  settled({ queue, task, outcome, reason, durationMs, source }: SettledRun): void {
    const counters = this.outcomes(queue, task ?? UNREADABLE_TASK);
    if (outcome === 'successful') counters.succeeded.inc();
    else if (outcome === 'failed') counters.failed.inc();
    else if (outcome === 'retry') counters.retried.inc();
    else {
      counters.quarantined.inc();
      // Rare, and a deployment fault: looked up per run rather than kept per task.
      if (reason === 'unknown-task') this.unknownTaskTotal.labels(queue, task ?? UNREADABLE_TASK).inc();
    }
    if (source === 'reaper') counters.expired.inc();
    if (durationMs !== undefined) {
      const histogram = (counters.duration[outcome] ??= this.durationSeconds.labels(
        queue,
        task ?? UNREADABLE_TASK,
        outcome,
      ));
      histogram.observe(durationMs / 1000);
    }
  }

  leasesRenewed(renewed: number, lost: number): void {
    if (renewed > 0) this.renewalsTotal.inc(renewed);
    if (lost > 0) this.lostTotal.inc(lost);
  }

  staleAcknowledgements(count: number, reason: StaleReason): void {
    this.staleTotal.labels(reason).inc(count);
  }

  private outcomes(queue: string, task: string): OutcomeCounters {
    const key = `${queue}\u0000${task}`;
    let counters = this.outcomesByTask.get(key);
    if (!counters) {
      counters = {
        succeeded: this.succeededTotal.labels(queue, task),
        failed: this.failedTotal.labels(queue, task),
        retried: this.retriedTotal.labels(queue, task),
        quarantined: this.quarantinedTotal.labels(queue, task),
        expired: this.expiredTotal.labels(queue, task),
        duration: {},
      };
      // Every outcome of a task starts at 0 once the process settles its first
      // run, so rate() and alerts on, say, failures work from the first one.
      const { succeeded, failed, retried, quarantined, expired } = counters;
      for (const counter of [succeeded, failed, retried, quarantined, expired]) counter.inc(0);
      this.outcomesByTask.set(key, counters);
    }
    return counters;
  }
}
