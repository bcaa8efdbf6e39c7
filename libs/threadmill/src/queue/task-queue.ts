import { Inject, Injectable, type Type } from '@nestjs/common';
import { newRunId } from '../codec/run-id.js';
import { TaskBackend, type NewRun, type QueueCounts, type StoreOutcome } from '../backend/task-backend.js';
import { RunEvents } from '../events/run-events.js';
import { EnqueueIncompleteError } from '../errors/enqueue-incomplete.error.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { PayloadSerializationError } from '../errors/payload-serialization.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import type { ThreadmillOptions } from '../module/threadmill-options.interface.js';
import { checkArguments } from '../task/task-arguments.js';
import type { TaskDefinition } from '../task/task-definition.js';
import { TaskRegistry } from '../task/task.registry.js';
import { THREADMILL_OPTIONS } from '../threadmill.constants.js';
import type {
  EnqueueManyItem,
  EnqueueManyOptions,
  EnqueueOptions,
  MethodName,
  TaskArgs,
  TaskReturn,
} from './enqueue-options.interface.js';
import {
  checkDistinctIds,
  describe,
  itemLabel,
  MAX_DEFERRAL_MS,
  MAX_DEFERRAL_TEXT,
  OPTION_KEYS,
  withOptions,
} from './enqueue-item.js';
import { encodeRunPayload } from './run-payload.js';
import { StoreCoalescer } from './store-coalescer.js';
import type { TaskResult } from './task-result.js';
import { taskResultFromStored } from './task-result.factory.js';
import { TaskStatus } from './task-status.enum.js';

interface PreparedRun {
  readonly run: NewRun;
  readonly definition: TaskDefinition;
  readonly args: readonly unknown[];
}

/** Runs per script call of an `enqueueMany` with `atomic: false`. */
const PIPELINE_CHUNK = 128;

/**
 * Enqueues task runs and reads their results. Inject it anywhere once
 * `ThreadmillModule` is imported.
 *
 * Every enqueue validates the task, its options and its arguments before it
 * writes anything: bad input throws a typed error and leaves Redis untouched.
 */
@Injectable()
export class TaskQueue {
  private readonly stores: StoreCoalescer;

  constructor(
    private readonly registry: TaskRegistry,
    private readonly backend: TaskBackend,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
    private readonly events: RunEvents,
  ) {
    this.stores = new StoreCoalescer(backend);
  }

  /**
   * Enqueues `task.method(...args)`, typed from the method's signature.
   * @returns the stored run (READY), or the existing run when `options.id` was already stored
   */
  enqueue<T, M extends MethodName<T>>(
    task: Type<T>,
    method: M,
    args: TaskArgs<T[M]>,
    options?: EnqueueOptions,
  ): Promise<TaskResult<TaskReturn<T[M]>>>;
  /** Enqueues the task registered under `name`, for producers that do not import its class. */
  enqueue<R = unknown>(name: string, args: readonly unknown[], options?: EnqueueOptions): Promise<TaskResult<R>>;
  enqueue(
    task: string | Type,
    methodOrArgs: string | readonly unknown[],
    argsOrOptions?: readonly unknown[] | EnqueueOptions,
    maybeOptions?: EnqueueOptions,
  ): Promise<TaskResult> {
    // enqueueMany's path for one run, without its arrays and async frames:
    // each async function a call passes through leaves it garbage
    // (docs/optimisations.md, step 43).
    let prepared: PreparedRun;
    try {
      const item: EnqueueManyItem =
        typeof task === 'string'
          ? withOptions({ task, args: methodOrArgs as readonly unknown[] }, argsOrOptions as EnqueueOptions)
          : withOptions(
              { task, method: methodOrArgs as string, args: argsOrOptions as readonly unknown[] },
              maybeOptions,
            );
      prepared = this.prepare(item, undefined);
    } catch (error) {
      // Rejected, not thrown: bad input fails the returned promise, as it
      // would from an async function.
      return Promise.reject(error);
    }
    return this.stores
      .store([prepared.run])
      .then(({ now, created }) => (created[0] ? this.created(prepared, now) : this.getResult(prepared.run.id)));
  }

  /**
   * Enqueues many runs. By default in one atomic call (one round trip):
   * either every run is validated and stored, or an error is thrown and
   * nothing is stored. With `{ atomic: false }`, in pipelined chunks (see
   * {@link EnqueueManyOptions.atomic}).
   * @returns one result per item, in order
   * @throws EnqueueIncompleteError when a call with `atomic: false` stops after storing some runs
   */
  async enqueueMany(items: readonly EnqueueManyItem[], options: EnqueueManyOptions = {}): Promise<TaskResult[]> {
    if (!Array.isArray(items)) {
      throw new InvalidEnqueueError('enqueueMany', 'items must be an array of { task, args, ...options }.');
    }
    const atomic = options === null || typeof options !== 'object' ? undefined : (options.atomic ?? true);
    if (typeof atomic !== 'boolean') {
      throw new InvalidEnqueueError('enqueueMany', 'options must be an object { atomic?: boolean }.');
    }
    if (items.length === 0) return [];
    if (!atomic && items.length > PIPELINE_CHUNK) return this.enqueuePipelined(items);
    const prepared = items.map((item, index) => this.prepare(item, items.length > 1 ? index : undefined));
    // Only ids a caller chose can repeat: Threadmill's are UUIDv7s, unique by construction.
    checkDistinctIds(prepared, ({ run }) => (run.idempotent ? run.id : undefined));
    const results = nulls(items.length);
    await this.settle(prepared, await this.stores.store(prepared.map((p) => p.run)), results, 0);
    return results as TaskResult[];
  }

  /**
   * `enqueueMany` with `atomic: false`: each chunk is validated and encoded,
   * then sent, and the next one prepared while Redis stores it (a call of
   * 1,000 runs as one script call keeps the producer and Redis each idle
   * while the other works). Chunks go out in order on one connection, so
   * they are stored in order.
   */
  private async enqueuePipelined(items: readonly EnqueueManyItem[]): Promise<TaskResult[]> {
    checkDistinctIds(items, (item) => (typeof item?.id === 'string' ? item.id : undefined));
    const results = nulls(items.length);
    const chunks: Promise<void>[] = [];
    let failure: { error: unknown } | undefined;
    for (let first = 0; first < items.length && !failure; first += PIPELINE_CHUNK) {
      const prepared: PreparedRun[] = [];
      try {
        for (let i = first; i < Math.min(items.length, first + PIPELINE_CHUNK); i++) {
          prepared.push(this.prepare(items[i]!, i));
        }
      } catch (error) {
        failure = { error };
        break;
      }
      chunks.push(
        this.backend
          .store(prepared.map((p) => p.run))
          .then((outcome) => this.settle(prepared, outcome, results, first))
          .catch((error: unknown) => {
            failure ??= { error };
          }),
      );
      // Lets the chunk's script call go out (the store's continuation is the
      // next microtask) before the next chunk is prepared.
      await Promise.resolve();
    }
    await Promise.all(chunks);
    if (!failure) return results as TaskResult[];
    if (results.every((result) => result === null)) throw failure.error;
    throw new EnqueueIncompleteError(results, failure.error);
  }

  /**
   * Writes the results of stored runs into `results` from `offset` on, and
   * announces the new ones. Runs whose caller-chosen id existed come back as
   * stored (one read for all of them), after the new ones are written.
   */
  private async settle(
    prepared: readonly PreparedRun[],
    { now, created }: StoreOutcome,
    results: (TaskResult | null)[],
    offset: number,
  ): Promise<void> {
    let existingIds: string[] | undefined;
    prepared.forEach((entry, i) => {
      if (created[i]) results[offset + i] = this.created(entry, now);
      else (existingIds ??= []).push(entry.run.id);
    });
    if (!existingIds) return;
    const existing = await this.loadExisting(existingIds);
    prepared.forEach(({ run }, i) => {
      if (!created[i]) results[offset + i] = existing.get(run.id)!;
    });
  }

  /**
   * The current record of run `id`.
   * @throws TaskResultNotFoundError when no run has this id (never enqueued, or its result expired)
   */
  async getResult<R = unknown>(id: string): Promise<TaskResult<R>> {
    if (typeof id !== 'string' || id === '') {
      throw new TaskResultNotFoundError(String(id));
    }
    const fields = await this.backend.load(id);
    if (!fields) throw new TaskResultNotFoundError(id);
    return taskResultFromStored<R>(id, fields);
  }

  /** The records of many runs in one round trip; `null` for each id with no run. */
  async getResults(ids: readonly string[]): Promise<(TaskResult | null)[]> {
    const records = await this.backend.loadMany(ids);
    return records.map((fields, i) => (fields ? taskResultFromStored(ids[i]!, fields) : null));
  }

  /**
   * How many runs each queue holds per segment: ready, deferred, running, and
   * finished ones still kept (successful, failed).
   * @param queues defaults to every queue of the module
   */
  counts(queues: readonly string[] = this.options.queues): Promise<QueueCounts[]> {
    return this.backend.counts(queues);
  }

  private async loadExisting(ids: string[]): Promise<Map<string, TaskResult>> {
    const results = await this.getResults(ids);
    const byId = new Map<string, TaskResult>();
    results.forEach((result, i) => {
      // The run existed at store time but may have expired since: report it as not found.
      if (!result) throw new TaskResultNotFoundError(ids[i]!);
      byId.set(ids[i]!, result);
    });
    return byId;
  }

  private prepare(item: EnqueueManyItem, index: number | undefined): PreparedRun {
    if (item === null || typeof item !== 'object') {
      throw new InvalidEnqueueError(
        `item${index === undefined ? '' : ` (item ${index})`}`,
        'each item must be an object { task, args, ...options }.',
      );
    }
    const definition =
      typeof item.task === 'function'
        ? this.registry.getByMethod(item.task, (item as { method: string }).method)
        : this.registry.get(item.task);
    const { args } = item;
    if (!Array.isArray(args)) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `args must be an array of the task's arguments, got ${describe(args)}.`,
      );
    }
    // for-in, not Object.keys: no array of keys per item in a bulk call.
    for (const key in item) {
      if (key !== 'task' && key !== 'method' && key !== 'args' && !OPTION_KEYS.has(key)) {
        throw new InvalidEnqueueError(
          itemLabel(definition.name, index),
          `unknown option "${key}"; the options are ${[...OPTION_KEYS].join(', ')}.`,
        );
      }
    }
    const run = this.buildRun(definition, item, index);
    return { run, definition, args };
  }

  private buildRun(definition: TaskDefinition, item: EnqueueManyItem, index: number | undefined): NewRun {
    const { runAfter, delayMs, priority = definition.priority, queue = definition.queue } = item;
    const idempotent = item.id !== undefined;
    const id = idempotent ? item.id : newRunId();
    if (typeof id !== 'string' || id.length === 0 || id.length > 200) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `id must be a string of 1-200 characters, got ${describe(id)}.`,
      );
    }
    if (!Number.isInteger(priority) || priority < -100 || priority > 100) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `priority must be an integer from -100 to 100, got ${describe(priority)}.`,
      );
    }
    if (typeof queue !== 'string' || !this.options.queues.includes(queue)) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `queue ${describe(queue)} is not one of the module's queues (${this.options.queues.join(', ')}).`,
      );
    }
    if (runAfter !== undefined && delayMs !== undefined) {
      throw new InvalidEnqueueError(itemLabel(definition.name, index), 'give either runAfter or delayMs, not both.');
    }
    if (runAfter !== undefined && (!(runAfter instanceof Date) || Number.isNaN(runAfter.getTime()))) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `runAfter must be a valid Date, got ${describe(runAfter)}.`,
      );
    }
    if (runAfter !== undefined && runAfter.getTime() > Date.now() + MAX_DEFERRAL_MS) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `runAfter must be at most ${MAX_DEFERRAL_TEXT} from now, got ${describe(runAfter)}.`,
      );
    }
    if (delayMs !== undefined && (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0)) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `delayMs must be a finite number >= 0, got ${describe(delayMs)}.`,
      );
    }
    if (delayMs !== undefined && delayMs > MAX_DEFERRAL_MS) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `delayMs must be at most ${MAX_DEFERRAL_MS} (${MAX_DEFERRAL_TEXT}), got ${describe(delayMs)}.`,
      );
    }
    // Only DTO parameters have anything to validate (the worker skips them alike).
    if (definition.argumentTypes.some(Boolean)) {
      const { problems } = checkArguments(definition.argumentTypes, item.args);
      if (problems.length > 0) {
        throw new InvalidEnqueueError(
          itemLabel(definition.name, index),
          `its arguments are invalid: ${problems.join(' | ')}. Fix the arguments.`,
        );
      }
    }
    let payload: string;
    try {
      payload = encodeRunPayload(definition.name, priority, item.args);
    } catch (error) {
      if (error instanceof PayloadSerializationError)
        throw new InvalidEnqueueError(itemLabel(definition.name, index), error.message);
      throw error;
    }
    // A UTF-16 unit takes at most 3 UTF-8 bytes: most payloads need no count.
    const bytes = payload.length * 3 <= this.options.maxPayloadBytes ? 0 : Buffer.byteLength(payload);
    if (bytes > this.options.maxPayloadBytes) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `its payload is ${bytes} bytes, over maxPayloadBytes (${this.options.maxPayloadBytes}). ` +
          'Store large data elsewhere (a database, object storage) and pass a reference.',
      );
    }
    return {
      id,
      queue,
      priority,
      runAt: runAfter ? runAfter.getTime() : 0,
      delayMs: delayMs ? Math.ceil(delayMs) : 0,
      leaseTtlMs: definition.leaseTtlMs ?? 0,
      payload,
      // JSON.stringify output (see encodeRunPayload): no raw newline.
      singleLine: true,
      idempotent,
    };
  }

  /** The result of a run this call stored, announced to the run events' listeners. */
  private created({ run, definition, args }: PreparedRun, now: number): TaskResult {
    if (this.events.active) this.events.enqueued(run.queue, definition.name, 1);
    const due = run.runAt > 0 ? run.runAt : run.delayMs > 0 ? now + run.delayMs : 0;
    return {
      id: run.id,
      taskName: definition.name,
      queue: run.queue,
      priority: run.priority,
      status: TaskStatus.READY,
      args,
      enqueuedAt: new Date(now),
      runAfter: due > now ? new Date(due) : null,
      startedAt: null,
      lastAttemptedAt: null,
      finishedAt: null,
      attempts: 0,
      workerIds: [],
      errors: [],
      returnValue: undefined,
    };
  }
}

/** One `null` per item, to be replaced by each item's result. */
function nulls(count: number): (TaskResult | null)[] {
  return Array.from({ length: count }, () => null);
}
