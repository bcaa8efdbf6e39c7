import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { TaskBackend } from '../backend/task-backend.js';
import { ThreadmillError } from '../errors/threadmill.error.js';
import { RunEvents } from '../events/run-events.js';
import type { ThreadmillOptions } from '../module/threadmill-options.interface.js';
import { TaskRegistry } from '../task/task.registry.js';
import { THREADMILL_OPTIONS, THREADMILL_WORKER_OPTIONS } from '../threadmill.constants.js';
import { Acknowledger } from './acknowledger.js';
import { Broker } from './broker.js';
import { Consumer, type ConsumerEnd } from './consumer.js';
import { collectBootGarbage } from './collect-boot-garbage.js';
import { LeaseKeeper } from './lease-keeper.js';
import { TaskExecutor } from './task-executor.js';
import { workerIdentity } from './worker-identity.js';
import type { WorkerSettings } from './worker-options.interface.js';

/**
 * Longest blocked wait of an idle consumer before it claims anyway (shorter
 * with short leases: see `ConsumerSettings.idleWaitMs`). A claim that finds
 * nothing costs Redis a few microseconds.
 */
const IDLE_WAIT_MS = 10_000;

/**
 * The worker of one process, as a Nest lifecycle service: it starts consuming
 * and/or brokering in `onApplicationBootstrap`, once every module is ready,
 * and drains when asked (by `runWorker`'s signal handler, before Nest
 * destroys any provider).
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Threadmill');
  readonly workerId: string;
  private consumer: Consumer | undefined;
  private broker: Broker | undefined;
  private draining: Promise<boolean> | undefined;
  private endResolve!: (end: ConsumerEnd) => void;
  /** Resolves when the consumer ends on its own (`--exit-empty`, `--max-tasks`) or crashes. */
  readonly ended = new Promise<ConsumerEnd>((resolve) => (this.endResolve = resolve));

  constructor(
    private readonly backend: TaskBackend,
    private readonly executor: TaskExecutor,
    private readonly registry: TaskRegistry,
    private readonly events: RunEvents,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
    @Inject(THREADMILL_WORKER_OPTIONS) private readonly settings: WorkerSettings,
  ) {
    this.workerId = workerIdentity(settings.role.slot);
  }

  /** The queues this worker consumes: `--queues`, else every queue of the module. */
  get queues(): readonly string[] {
    return this.settings.queues.length > 0 ? this.settings.queues : this.options.queues;
  }

  onApplicationBootstrap(): void {
    const unknown = this.queues.filter((queue) => !this.options.queues.includes(queue));
    if (unknown.length > 0) {
      throw new ThreadmillError(
        `--queues names ${unknown.map((q) => `"${q}"`).join(', ')}, not among the module's queues ` +
          `(${this.options.queues.join(', ')}). Fix --queues or add the queue to ThreadmillModule.forRoot({ queues }).`,
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
      await this.broker?.stop();
      return clean;
    })();
    return this.draining;
  }

  /** Stops hard: aborts running attempts; the reaper recovers them. */
  abort(): void {
    this.consumer?.abort();
  }

  private startBroker(): void {
    this.broker = new Broker(
      this.backend,
      this.executor,
      {
        queues: this.options.queues,
        intervalMs: this.options.brokerIntervalMs,
        claimTtlMs: this.options.leaseTtlMs,
        maxRecoveries: this.options.maxRecoveries,
      },
      this.events,
    );
    this.broker.start();
  }

  private startConsumer(): void {
    const { options, settings } = this;
    const queues = this.queues;
    const shortestLease = Math.min(
      options.leaseTtlMs,
      ...this.registry.all().map((task) => task.leaseTtlMs ?? options.leaseTtlMs),
    );
    let consumer: Consumer | undefined;
    // Renewals every third of the shortest lease, so two can fail before a lease lapses.
    const renewEveryMs = Math.max(Math.floor(shortestLease / 3), 10);
    const keeper = new LeaseKeeper(
      this.backend,
      renewEveryMs,
      () => ({
        id: this.workerId,
        queues,
        concurrency: settings.concurrency,
        startedAt: consumer?.startedAt ?? Date.now(),
        done: consumer?.completed ?? 0,
        held: consumer?.held ?? 0,
      }),
      this.events,
    );
    const acknowledger = new Acknowledger(this.backend, options.batchSize, this.events);
    consumer = this.consumer = new Consumer(
      this.backend,
      this.executor,
      keeper,
      acknowledger,
      {
        queues,
        concurrency: settings.concurrency,
        prefetch: settings.prefetch,
        batchSize: options.batchSize,
        workerId: this.workerId,
        exitWhenEmpty: settings.exitEmpty,
        maxTasks: settings.role.maxTasks,
        idleWaitMs: Math.min(IDLE_WAIT_MS, renewEveryMs),
      },
      this.events,
    );
    // Boot garbage is collected now, where no run waits, not by the first scavenges under load.
    if (settings.bootGc !== false) collectBootGarbage();
    consumer.start().then(this.endResolve, (error: Error) => {
      this.logger.error(`Consumer crashed: ${error.stack ?? error.message}`);
      this.endResolve('crashed');
    });
    this.logger.log(
      `Worker ${this.workerId} consuming ${queues.join(', ')} with concurrency ${settings.concurrency}` +
        (settings.role.maxTasks > 0 ? `, recycled after ${settings.role.maxTasks} runs` : ''),
    );
  }
}
