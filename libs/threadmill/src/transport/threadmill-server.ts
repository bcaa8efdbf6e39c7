import { Server, type CustomTransportStrategy } from '@nestjs/microservices';
import { ThreadmillError } from '../errors/threadmill.error.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import type { ConsumerEnd } from '../worker/consumer.js';
import { Worker } from '../worker/worker.js';
import type { WorkerRole, WorkerSettings } from '../worker/worker-options.interface.js';
import type { ServerBinding } from './server-binding.js';
import { layerServerOptions, serverSettings, type ThreadmillServerOptions } from './threadmill-server.options.js';
import { THREADMILL_TRANSPORT } from './threadmill-transport.js';

/** The states `ThreadmillServer.status` reports. */
export type ThreadmillServerStatus = 'consuming' | 'draining' | 'closed';

/**
 * The Threadmill worker as a Nest microservice transport: it consumes the
 * application's queues and runs each run's task, a `@Task()` method or an
 * `@EventPattern` / `@MessagePattern` handler (through Nest's guards,
 * interceptors, pipes and exception filters), promotes deferred runs and
 * reaps expired leases.
 *
 * The application imports `ThreadmillModule`, which configures the backend;
 * the server takes how its worker consumes, over the application's
 * `ThreadmillWorkerModule` options. `close()` drains: it stops
 * claiming, hands prefetched runs back, finishes running attempts within
 * `shutdownTimeoutMs` and flushes their acknowledgements, before Nest
 * destroys any provider.
 *
 * @example
 * ```ts
 * const app = await NestFactory.createMicroservice(WorkerModule, {
 *   strategy: new ThreadmillServer({ concurrency: 20 }),
 * });
 * await app.listen();
 * ```
 */
export class ThreadmillServer
  extends Server<Record<string, Function>, ThreadmillServerStatus>
  implements CustomTransportStrategy
{
  override readonly transportId = THREADMILL_TRANSPORT;
  /** The backend it consumes (the `name` of a `ThreadmillModule` of its application). */
  readonly backend: string;
  private settings: WorkerSettings;
  private binding: ServerBinding | undefined;
  private worker: Worker | undefined;
  private closing: Promise<boolean> | undefined;
  private endResolve!: (end: ConsumerEnd) => void;
  /** Resolves when the worker stops on its own (`exitEmpty`, `maxTasks`) or its consumer crashes. */
  readonly ended = new Promise<ConsumerEnd>((resolve) => (this.endResolve = resolve));

  /**
   * @param options how the worker consumes
   * @param role @internal what the worker does in a `runWorker` pool
   * @throws ThreadmillConfigError for bad options
   */
  constructor(
    private readonly options: ThreadmillServerOptions = {},
    private readonly role?: WorkerRole,
  ) {
    super();
    const { backend, ...settings } = serverSettings(options, role);
    this.backend = backend;
    this.settings = settings;
  }

  /**
   * @internal The settings the worker runs with: once the server listens,
   * its options over the application's `ThreadmillWorkerModule` options.
   */
  get workerSettings(): WorkerSettings {
    return this.settings;
  }

  /** @internal Called by `ThreadmillModule` when the server joins its application. */
  bind(binding: ServerBinding): void {
    this.binding = binding;
  }

  /** Starts consuming once the application is ready (see {@link ServerBinding.whenReady}). */
  listen(callback: (error?: unknown) => void): void {
    const { binding } = this;
    if (!binding) {
      callback(new ThreadmillError(this.unboundMessage()));
      return;
    }
    try {
      // The backend stays the one the server was bound to by its own options.
      const { backend: _bound, ...settings } = serverSettings(
        layerServerOptions(binding.workerOptions, this.options, { backend: this.backend }),
        this.role,
      );
      this.settings = settings;
      // A hybrid application starts its microservices before its own
      // initialisation; the worker then starts at the application's bootstrap.
      binding.whenReady(() => this.start(binding));
    } catch (error) {
      callback(error);
      return;
    }
    callback();
  }

  private unboundMessage(): string {
    if (this.backend !== DEFAULT_BACKEND) {
      return (
        `ThreadmillServer found no ThreadmillModule of backend "${this.backend}" in its application. Import ` +
        `ThreadmillModule.forRoot({ name: '${this.backend}', connection, queues }) (or forRootAsync({ name: '${this.backend}', ... })) ` +
        'in the module you pass to createMicroservice() or the hybrid application, or give the server the backend of a module it has.'
      );
    }
    return (
      'ThreadmillServer found no ThreadmillModule in its application. Import ThreadmillModule.forRoot({ connection, queues }) ' +
      '(or forRootAsync) in the module you pass to createMicroservice() or the hybrid application: it configures the backend ' +
      'the server consumes.'
    );
  }

  private start(binding: ServerBinding): void {
    if (this.closing) return;
    const worker = new Worker(binding.runtime, this.settings);
    worker.start();
    this.worker = worker;
    void worker.ended.then(this.endResolve);
    this.report('consuming');
  }

  /**
   * Drains the worker (idempotent).
   * @returns false when running attempts were abandoned at the shutdown timeout
   */
  close(): Promise<boolean> {
    this.closing ??= (async () => {
      this.report('draining');
      const clean = (await this.worker?.drain()) ?? true;
      this.report('closed');
      return clean;
    })();
    return this.closing;
  }

  private report(status: ThreadmillServerStatus): void {
    // Nest's Server keeps the stream behind `status` under this name.
    // oxlint-disable-next-line no-underscore-dangle
    this._status$.next(status);
  }

  /** Stops hard: aborts running attempts, which the reaper recovers. */
  abort(): void {
    this.worker?.abort();
  }

  /** Runs this server's worker finished. */
  get completed(): number {
    return this.worker?.completed ?? 0;
  }

  /** Runs held now (running and prefetched). */
  get held(): number {
    return this.worker?.held ?? 0;
  }

  /** The worker's id (`host:pid:slot`), once it consumes. */
  get workerId(): string | undefined {
    return this.worker?.workerId;
  }

  /** The server emits no events: observe runs through `RunEvents`, the server through {@link status}. */
  on(): never {
    throw new ThreadmillError(
      'ThreadmillServer emits no events: subscribe to RunEvents for runs, or to server.status for its state.',
    );
  }

  /** The worker this server runs, once it consumes. */
  unwrap<T>(): T {
    return this.worker as T;
  }
}
