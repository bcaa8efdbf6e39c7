import { Logger } from '@nestjs/common';
import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { defer, Observable } from 'rxjs';
import { RedisConnections } from '../backend/redis/redis-connections.js';
import { createBackend } from '../backend/partitioned/create-backend.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { RunFailedError } from '../errors/run-failed.error.js';
import { ThreadmillError } from '../errors/threadmill.error.js';
import { RunEvents } from '../events/run-events.js';
import { connectBackend } from '../backend/connect-backend.js';
import type { ThreadmillModuleOptions, ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { validateOptions } from '../options/validate-options.js';
import type { EnqueueOptions } from '../queue/enqueue-options.interface.js';
import { TaskQueue } from '../queue/task-queue.js';
import type { TaskResult } from '../records/task-result.js';
import { TaskStatus } from '../records/task-status.enum.js';
import { TaskContract } from '../task/task-contract.js';
import { TaskRegistry } from '../task/task.registry.js';
import { ThreadmillRecord } from './threadmill-record.js';

/** Options of a {@link ThreadmillClient}: where the backend is, as for `ThreadmillModule.forRoot()`. */
export type ThreadmillClientOptions = Omit<ThreadmillModuleOptions, 'isGlobal'>;

/** The states `ThreadmillClient.status` reports (typed `string` on the class: `ClientsModule` takes `ClientProxy<…, string>`). */
export type ThreadmillClientStatus = 'connected' | 'disconnected';

/** What a connected client holds. */
interface Connection {
  readonly connections: RedisConnections;
  readonly queue: TaskQueue;
}

const WHERE = 'ThreadmillClient options (ClientsModule.register)';

/**
 * A Nest `ClientProxy` that enqueues runs: register it with
 * `ClientsModule.register([{ name: 'TASKS', customClass: ThreadmillClient, options: { connection, queues } }])`
 * and inject it with `@Inject('TASKS')`.
 *
 * - `emit(pattern, payload)` enqueues a run of the handler or task of that
 *   name, and emits the stored run (its `TaskResult`, READY) when Redis
 *   stored it. Nothing is sent before the Observable is subscribed to.
 * - `send(pattern, payload)` enqueues and emits what the run returns once it
 *   finishes SUCCESSFUL, or errors with a `RunFailedError` when it ends
 *   FAILED, QUARANTINED or CANCELLED. Unsubscribing (rxjs `timeout()`, a closed
 *   request) stops waiting; it does not cancel the run.
 *
 * A payload is the handler's one argument; a task contract (`defineTask`)
 * takes its argument tuple instead. Wrap either in a {@link ThreadmillRecord}
 * to give the run options (delay, priority, queue, id). Bad input errors the
 * Observable with the typed errors of `TaskQueue.enqueue`, and nothing is
 * stored.
 */
export class ThreadmillClient extends ClientProxy {
  private readonly logger = new Logger('Threadmill');
  private readonly options: ThreadmillOptions;
  private connection: Promise<Connection> | undefined;
  private connected: Connection | undefined;

  /** @throws ThreadmillConfigError for bad options */
  constructor(options: ThreadmillClientOptions = {}) {
    super();
    this.options = validateOptions(options, WHERE);
  }

  /** Connects to Redis (once; again after a failure). Every send and emit connects first. */
  connect(): Promise<TaskQueue> {
    this.connection ??= this.open().catch((error: unknown) => {
      this.connection = undefined;
      throw error;
    });
    return this.connection.then(({ queue }) => queue);
  }

  private async open(): Promise<Connection> {
    const { options } = this;
    const connections = new RedisConnections(options.connection, options.alias, options.connectTimeoutMs);
    const backend = createBackend(connections, options);
    await connectBackend(connections, backend, options, this.logger);
    // Named like the backend it enqueues to, so contracts of another backend are refused.
    const queue = new TaskQueue(new TaskRegistry(options.name), backend, options, new RunEvents());
    this.connected = { connections, queue };
    this.report('connected');
    return this.connected;
  }

  /** Stops waiting for runs and closes the connections (Nest calls it at application shutdown). */
  async close(): Promise<void> {
    const pending = this.connection;
    this.connection = undefined;
    this.connected = undefined;
    const connection = await pending?.catch(() => undefined);
    if (!connection) return;
    connection.queue.beforeApplicationShutdown();
    await connection.connections.close();
    this.report('disconnected');
  }

  private report(status: ThreadmillClientStatus): void {
    // Nest's ClientProxy keeps the stream behind `status` under this name.
    // oxlint-disable-next-line no-underscore-dangle
    this._status$.next(status);
  }

  /** Enqueues a run of a contract's task, typed, and emits its result when it finishes SUCCESSFUL. */
  override send<A extends readonly unknown[], R>(
    contract: TaskContract<A, R>,
    args: A | ThreadmillRecord<A>,
  ): Observable<R>;
  /** Enqueues a run of the handler or task named by `pattern` and emits its result when it finishes SUCCESSFUL. */
  override send<TResult = any, TInput = any>(pattern: unknown, data: TInput): Observable<TResult>;
  override send(pattern: unknown, data: unknown): Observable<unknown> {
    return new Observable((subscriber) => {
      const stop = new AbortController();
      this.store(pattern, data, true)
        .then(({ queue, run }) => queue.waitFor(run.id, { signal: stop.signal }))
        .then((result) => {
          if (result.status !== TaskStatus.SUCCESSFUL) throw new RunFailedError(result);
          subscriber.next(result.returnValue);
          subscriber.complete();
        })
        .catch((error: unknown) => {
          if (!stop.signal.aborted) subscriber.error(error);
        });
      return () => stop.abort();
    });
  }

  /** Enqueues a run of a contract's task, typed, and emits the stored run. */
  override emit<A extends readonly unknown[], R>(
    contract: TaskContract<A, R>,
    args: A | ThreadmillRecord<A>,
  ): Observable<TaskResult<R>>;
  /** Enqueues a run of the handler or task named by `pattern` and emits the stored run. */
  override emit<TResult = TaskResult, TInput = any>(pattern: unknown, data: TInput): Observable<TResult>;
  override emit(pattern: unknown, data: unknown): Observable<unknown> {
    return defer(() => this.store(pattern, data, false).then(({ run }) => run));
  }

  /** The client's `TaskQueue` (results, `waitFor`, `enqueueMany`), once connected. */
  unwrap<T = TaskQueue>(): T {
    if (!this.connected) {
      throw new ThreadmillError('ThreadmillClient is not connected yet: await client.connect() first.');
    }
    return this.connected.queue as T;
  }

  /** Nest's packet path is not used: `send` and `emit` enqueue directly. */
  protected publish(_packet: ReadPacket, _callback: (packet: WritePacket) => void): () => void {
    throw new ThreadmillError('ThreadmillClient sends through send() and emit().');
  }

  /** Nest's packet path is not used: `send` and `emit` enqueue directly. */
  protected dispatchEvent<T>(_packet: ReadPacket): Promise<T> {
    return Promise.reject(new ThreadmillError('ThreadmillClient sends through send() and emit().'));
  }

  /** Stores the run `pattern` and `data` describe (`waitable` when its sender waits for it). */
  private async store(
    pattern: unknown,
    data: unknown,
    waitable: boolean,
  ): Promise<{ queue: TaskQueue; run: TaskResult }> {
    const queue = await this.connect();
    const record = data instanceof ThreadmillRecord ? data : undefined;
    const payload: unknown = record ? record.data : data;
    // A deduplicated run may be another sender's, stored before this call:
    // `send` then waits for it through its kept result, not a registration.
    const options: EnqueueOptions =
      waitable && record?.options?.dedupe === undefined ? { ...record?.options, waitable } : { ...record?.options };
    if (pattern instanceof TaskContract) {
      if (!Array.isArray(payload)) {
        throw new InvalidEnqueueError(
          pattern.name,
          "a contract's runs take its argument tuple: pass an array of the task's arguments.",
        );
      }
      return { queue, run: await queue.enqueue(pattern, payload, options) };
    }
    if (typeof pattern !== 'string' && (typeof pattern !== 'object' || pattern === null)) {
      throw new InvalidEnqueueError('send/emit', 'pattern must be a task contract, a string or a pattern object.');
    }
    return { queue, run: await queue.enqueue(this.normalizePattern(pattern as string), [payload], options) };
  }
}
