import { Logger } from '@nestjs/common';
import type { TaskBackend } from '../backend/task-backend.js';
import { RunReporter } from '../task/run-reporter.js';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import type { RunEvents } from '../events/run-events.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import type { TaskRegistry } from '../task/task.registry.js';
import { Acknowledger } from './acknowledger.js';
import { TaskInspector } from '../inspector/task-inspector.js';
import { Broker } from './broker.js';
import { ScheduleRunner } from '../schedule/schedule-runner.js';
import { CapacityGuard } from './capacity-guard.js';
import { collectBootGarbage } from './collect-boot-garbage.js';
import { Consumer, type ConsumerEnd } from './consumer.js';
import { LeaseKeeper } from './lease-keeper.js';
import { StaleAcknowledgementSummary } from './stale-acknowledgement-summary.js';
import { TaskExecutor } from './task-executor.js';
import { AttemptTracer } from '../tracing/attempt-tracer.js';
import { workerIdentity } from './worker-identity.js';
import type { WorkerSettings } from './worker-options.interface.js';

/**
 * Longest blocked wait of an idle consumer before it claims anyway (shorter
 * with short leases: see `ConsumerSettings.idleWaitMs`). A claim that finds
 * nothing costs Redis a few microseconds.
 */
const IDLE_WAIT_MS = 10_000;

/** An adaptive prefetch's floor: what a process holds beyond its slots while runs are slow. */
const ADAPTIVE_PREFETCH_FLOOR = 2;

/** What a worker needs of the application: its backend, tasks, events and options. */
export interface WorkerRuntime {
  readonly backend: TaskBackend;
  readonly registry: TaskRegistry;
  readonly events: RunEvents;
  readonly options: ThreadmillOptions;
}

/**
 * The worker of one process: its consumer and/or broker. `ThreadmillServer`
 * starts it once Nest has registered every handler and task, and drains it
 * when the application closes, before Nest destroys any provider.
 */
export class Worker {
  private readonly logger = new Logger('Threadmill');
  readonly workerId: string;
  private readonly executor: TaskExecutor;
  private consumer: Consumer | undefined;
  private broker: Broker | undefined;
  private guard: CapacityGuard | undefined;
  private staleSummary: StaleAcknowledgementSummary | undefined;
  private draining: Promise<boolean> | undefined;
  private endResolve!: (end: ConsumerEnd) => void;
  /** Resolves when the consumer ends on its own (`exitEmpty`, `maxTasks`) or crashes. */
  readonly ended = new Promise<ConsumerEnd>((resolve) => (this.endResolve = resolve));

  constructor(
    private readonly runtime: WorkerRuntime,
    private readonly settings: WorkerSettings,
  ) {
    this.workerId = workerIdentity(settings.role.slot);
    this.executor = new TaskExecutor(
      runtime.registry,
      new AttemptTracer(runtime.options.traceLinks),
      new RunReporter(runtime.backend),
    );
  }

  /** The queues this worker consumes: its `queues`, else every queue of the module. */
  get queues(): readonly string[] {
    return this.settings.queues.length > 0 ? this.settings.queues : this.runtime.options.queues;
  }

  /** @throws ThreadmillConfigError when `queues` names a queue the module does not declare */
  start(): void {
    const { options } = this.runtime;
    const unknown = this.queues.filter((queue) => !options.queues.includes(queue));
    if (unknown.length > 0) {
      throw new ThreadmillConfigError(
        [
          `queues: ${unknown.map((q) => `"${q}"`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not among the ` +
            `module's queues (${options.queues.join(', ')}); consume declared queues only, or add it to ` +
            'ThreadmillModule.forRoot({ queues })',
        ],
        "the worker's options (new ThreadmillServer({ queues }), runWorker's --queues)",
      );
    }
    if (this.settings.role.broker) this.startBroker();
    if (this.settings.role.consume) this.startConsumer();
  }

  /** Runs held right now (running and prefetched). */
  get held(): number {
    return this.consumer?.held ?? 0;
  }

  /** Runs finished by this process. */
  get completed(): number {
    return this.consumer?.completed ?? 0;
  }

  /**
   * Stops claiming, hands prefetched runs back, finishes running attempts (up
   * to the shutdown timeout) and flushes acknowledgements; then stops the
   * broker. Idempotent.
   * @returns false when running attempts were abandoned at the shutdown timeout
   */
  drain(): Promise<boolean> {
    this.draining ??= (async () => {
      const clean = (await this.consumer?.stop(this.settings.shutdownTimeoutMs)) ?? true;
      // Its last acknowledgements are in: what they discarded is told now, not lost with the process.
      this.staleSummary?.flush();
      await this.broker?.stop();
      await this.guard?.stop();
      return clean;
    })();
    return this.draining;
  }

  /** Stops hard: aborts running attempts; the reaper recovers them. */
  abort(): void {
    this.consumer?.abort();
    this.staleSummary?.flush();
  }

  private startBroker(): void {
    const { backend, options, events } = this.runtime;
    // The broker runs once per pool: so does the capacity guard, which watches the whole backend.
    const inspector = new TaskInspector(backend, options);
    const guard = new CapacityGuard(() => inspector.capacity(), options.memoryCheckIntervalMs);
    this.guard = guard;
    this.broker = new Broker(
      backend,
      this.executor,
      {
        queues: options.queues,
        intervalMs: options.brokerIntervalMs,
        claimTtlMs: options.leaseTtlMs,
        maxRecoveries: options.maxRecoveries,
      },
      events,
      () => guard.nudge(),
      // Schedules ride the broker's passes, in every pool: each slot fires once whichever pool gets there.
      new ScheduleRunner(backend.schedules, {
        declarations: () => this.runtime.registry.schedules(),
        queues: options.queues,
        firedBy: this.workerId,
      }),
    );
    this.broker.start();
  }

  private startConsumer(): void {
    const { settings } = this;
    const { backend, options, events, registry } = this.runtime;
    const queues = this.queues;
    const shortestLease = Math.min(
      options.leaseTtlMs,
      ...registry.all().map((task) => task.leaseTtlMs ?? options.leaseTtlMs),
    );
    let consumer: Consumer | undefined;
    // Renewals every third of the shortest lease, so two can fail before a lease lapses.
    const renewEveryMs = Math.max(Math.floor(shortestLease / 3), 10);
    const keeper = new LeaseKeeper(
      backend,
      renewEveryMs,
      () => ({
        id: this.workerId,
        queues,
        concurrency: settings.concurrency,
        // On Redis's clock, as every time the inspectors show beside it.
        startedAt: (consumer?.startedAt ?? Date.now()) - (backend.clockOffsetMs() ?? 0),
        done: consumer?.completed ?? 0,
        held: consumer?.held ?? 0,
        clockOffsetMs: backend.clockOffsetMs(),
      }),
      events,
    );
    this.staleSummary = new StaleAcknowledgementSummary(settings.logSummaryIntervalMs);
    const acknowledger = new Acknowledger(backend, options.batchSize, events, this.staleSummary);
    consumer = this.consumer = new Consumer(
      backend,
      this.executor,
      keeper,
      acknowledger,
      {
        queues,
        concurrency: settings.concurrency,
        prefetch: settings.prefetch ?? ADAPTIVE_PREFETCH_FLOOR,
        adaptivePrefetch: settings.prefetch === undefined,
        batchSize: options.batchSize,
        workerId: this.workerId,
        exitWhenEmpty: settings.exitEmpty,
        maxTasks: settings.role.maxTasks,
        idleWaitMs: Math.min(IDLE_WAIT_MS, renewEveryMs),
      },
      events,
    );
    // Boot garbage is collected now, where no run waits, not by the first scavenges under load.
    if (settings.bootGc !== false) collectBootGarbage();
    consumer.start().then(this.endResolve, (error: Error) => {
      this.logger.error(`Consumer crashed: ${error.stack ?? error.message}`);
      this.endResolve('crashed');
    });
    const started =
      `Worker ${this.workerId} consuming ${queues.join(', ')} with concurrency ${settings.concurrency}` +
      (settings.role.maxTasks > 0 ? `, recycled after ${settings.role.maxTasks} runs` : '');
    if (registry.names().length > 0) {
      this.logger.log(started);
    } else {
      // Every run it claims would be quarantined: the module most likely misses the tasks' modules.
      this.logger.warn(
        `${started}, but it registers no task: every run it claims is quarantined (reason unknown-task). Import ` +
          "the modules that provide the tasks (their @Task() providers, or their handlers' controllers) into the " +
          "worker's module.",
      );
    }
  }
}
