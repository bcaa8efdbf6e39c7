import { RetryNotice } from './retry-notice.js';
import { quarantinedOnReap } from '../rules/lease-rules.js';
import type { BrokerSteps } from '../backend/backend-roles.js';
import { Logger } from '@nestjs/common';
import type { Acknowledgement, LeasedRun, WorkSignal } from '../backend/task-backend.js';
import { AcknowledgementTimeoutError } from '../errors/acknowledgement-timeout.error.js';
import { RunEvents } from '../events/run-events.js';
import { overriddenTtl } from '../records/result-ttl.js';
import { taskResultFromLease } from '../codec/task-result.factory.js';
import { toTaskError } from './task-error.js';
import type { ScheduleRunner } from '../schedule/schedule-runner.js';
import type { Attempt, TaskExecutor } from './task-executor.js';

/** How long an idle broker blocks before it re-issues its blocked wait. */
const IDLE_BLOCK_MS = 60_000;

/** How one broker works; derived from the module options. */
export interface BrokerSettings {
  readonly queues: readonly string[];
  /** Longest pause between passes while runs are deferred or leased. */
  readonly intervalMs: number;
  /** How long the broker may take to settle a reaped run before another broker may reap it again. */
  readonly claimTtlMs: number;
  /** Lease expiries in a row after which a run is quarantined instead of retried. */
  readonly maxRecoveries: number;
}

/**
 * The broker of a worker pool: promotes deferred runs when they are due,
 * reaps runs whose lease expired (back to READY uncharged when their attempt
 * never started, else to their retry policy as an
 * `AcknowledgementTimeoutError`, or FAILED), and removes finished runs whose
 * result TTL passed. It sleeps until the
 * next deferred run is due, at most `intervalMs`, and wakes early when a new
 * run is deferred. Several brokers may run against one backend: every move is
 * one atomic script call, and a reaped run is claimed by exactly one broker.
 */
export class Broker {
  private readonly logger = new Logger('Threadmill');
  private readonly passNotice = new RetryNotice('Broker pass', this.logger);
  private readonly scheduleNotice = new RetryNotice('Schedule pass', this.logger);
  private readonly stopSignal = new AbortController();
  private signal: WorkSignal | undefined;
  private loop: Promise<void> | undefined;
  /** Runs reaped by this broker since it started. */
  reaped = 0;

  constructor(
    private readonly backend: BrokerSteps,
    private readonly executor: TaskExecutor,
    private readonly settings: BrokerSettings,
    private readonly events = new RunEvents(),
    /** Called after each pass that succeeded: work that should run no more often than the broker does. */
    private readonly afterPass?: () => void,
    /** The backend's schedules, fired in each pass (`docs/schedules.md`). */
    private readonly schedules?: ScheduleRunner,
  ) {}

  start(): void {
    this.signal = this.backend.brokerSignal();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopSignal.abort();
    await this.signal?.close();
    await this.loop;
  }

  /**
   * One pass: promotion, reaping and trimming; returns how long to sleep
   * before the next: until the next deferred run is due or the next lease
   * may expire (at most `intervalMs`), or the next finished run's result
   * expires, and {@link IDLE_BLOCK_MS} at most: an idle broker only holds a
   * blocked command, and the first new deferred run or lease wakes it.
   */
  async pass(): Promise<number> {
    // Due slots first: their runs are stored at their time.
    const untilSlot = await this.fireSchedules();
    const { queues, claimTtlMs } = this.settings;
    const { now, nextDueAt } = await this.backend.promote(queues);
    const { runs, returned, nextDeadline } = await this.backend.reap(queues, claimTtlMs, this.settings.maxRecoveries);
    const { nextExpiryAt } = await this.backend.trim(queues);
    if (returned > 0) {
      this.logger.warn(
        `Handed back ${returned} run(s) whose lease expired before they started (their worker died, stalled or ` +
          'lost Redis while holding them); they were not charged an attempt.',
      );
    }
    if (runs.length > 0) {
      await this.settle(runs);
      return 0;
    }
    // Deferred runs and leases are re-checked at least every `intervalMs`
    // (a marker may be lost); a result's expiry only needs its own time.
    const next = Math.min(nextDueAt ?? Infinity, nextDeadline ?? Infinity);
    const planned = next === Infinity ? IDLE_BLOCK_MS : Math.min(Math.max(next - now, 1), this.settings.intervalMs);
    const kept = nextExpiryAt === null ? planned : Math.min(planned, Math.max(nextExpiryAt - now, 1));
    return untilSlot === null ? kept : Math.min(kept, untilSlot);
  }

  /**
   * Fires the due schedule slots; returns how long until the next one (null:
   * none planned). A failure only shortens the pause: promotion and reaping
   * must not wait on schedules.
   */
  private async fireSchedules(): Promise<number | null> {
    if (!this.schedules) return null;
    try {
      const pauseMs = await this.schedules.pass();
      this.scheduleNotice.succeeded();
      return pauseMs;
    } catch (error) {
      this.scheduleNotice.failed(error, 'within a second');
      return 1_000;
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopSignal.signal.aborted) {
      let pauseMs: number;
      try {
        pauseMs = await this.pass();
        failures = 0;
        this.passNotice.succeeded();
        this.afterPass?.();
      } catch (error) {
        pauseMs = Math.min(100 * 2 ** failures++, this.settings.intervalMs);
        this.passNotice.failed(error, `in ${pauseMs} ms`);
      }
      if (pauseMs > 0 && !this.stopSignal.signal.aborted) {
        try {
          await this.signal!.wait(pauseMs);
        } catch {
          // A broken blocking connection only shortens the pause.
        }
      }
    }
  }

  private async settle(runs: readonly LeasedRun[]): Promise<void> {
    const settled = runs.map((run) => this.expired(run));
    const acks: Acknowledgement[] = runs.map((run, i) => ({
      id: run.id,
      queue: run.queue,
      token: run.token,
      outcome: settled[i]!.outcome,
      source: 'reaper',
      resultTtlMs: overriddenTtl(settled[i]!.resultTtlMs, settled[i]!.outcome.kind),
    }));
    const applied = await this.backend.acknowledge(acks);
    let count = 0;
    let quarantined = 0;
    applied.forEach((ok, i) => {
      if (!ok) return;
      const { outcome, task } = settled[i]!;
      count++;
      if (outcome.kind === 'quarantine') quarantined++;
      const run = runs[i]!;
      this.events.settled({
        id: run.id,
        attempt: run.attempts,
        queue: run.queue,
        task,
        outcome: outcome.kind,
        reason: outcome.kind === 'quarantine' ? outcome.reason : undefined,
        source: 'reaper',
      });
    });
    this.reaped += count;
    this.logger.warn(
      `Recovered ${count} run(s) whose lease expired (worker died, stalled or lost Redis)` +
        (quarantined > 0 ? `; quarantined ${quarantined} of them` : ''),
    );
  }

  /** What becomes of a run whose lease expired. */
  private expired(run: LeasedRun): Attempt {
    const readable = this.executor.read(run);
    if ('outcome' in readable) return { ...readable, resultTtlMs: undefined };
    const { payload, definition } = readable;
    const result = taskResultFromLease(run, payload);
    const error = new AcknowledgementTimeoutError(run.id, definition.name, run.workerIds.at(-1));
    if (quarantinedOnReap(run.recoveries ?? 0, this.settings.maxRecoveries)) {
      return {
        task: definition.name,
        resultTtlMs: undefined,
        outcome: {
          kind: 'quarantine',
          reason: 'lease-expired-repeatedly',
          message:
            `The lease of ${definition.name} expired ${run.recoveries} times in a row: the task keeps killing or ` +
            'stalling its worker (crash, out of memory, blocked event loop, or a lease too short for it). Fix the task ' +
            'or raise its leaseTtlMs, then requeue the run.',
          error: toTaskError(error, run.attempts),
        },
      };
    }
    return {
      task: definition.name,
      resultTtlMs: definition.resultTtlMs,
      outcome: this.executor.failure(run, result, definition.retry, error),
    };
  }
}
