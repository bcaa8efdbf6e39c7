import type { ProducerStore } from '../backend/backend-roles.js';
import { Inject, Injectable, type BeforeApplicationShutdown, type Type } from '@nestjs/common';
import { TaskBackend, type NewRun, type QueueCounts, type StoreOutcome } from '../backend/task-backend.js';
import { RunEvents } from '../events/run-events.js';
import { EnqueueIncompleteError } from '../errors/enqueue-incomplete.error.js';
import { UnconfirmedEnqueueError } from '../errors/unconfirmed-enqueue.error.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import type { TaskContract } from '../task/task-contract.js';
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
import { describeValue } from '../codec/describe-value.js';
import { checkDistinctIds, itemLabel, OPTION_KEYS, waitableIds, withOptions } from './enqueue-item.js';
import { EnqueueTargets, type EnqueueTarget } from './enqueue-target.js';
import { buildRun, checkSignatures } from './build-run.js';
import { traceHeaders } from '../tracing/trace-headers.js';
import { StoreCoalescer } from './store-coalescer.js';
import type { Waiter } from '../backend/waiting/waiter.js';
import type { WaitOptions } from './wait-options.interface.js';
import { waitCallProblem } from './wait-call-problem.js';
import type { TaskResult } from '../records/task-result.js';
import { taskResultFromStored } from '../codec/task-result.factory.js';
import { TaskStatus } from '../records/task-status.enum.js';
import { cancelRun, type CancelOutcome } from './cancel-run.js';
import { FlowEnqueue } from './flow-enqueue.js';
import type { BatchSpec, EnqueuedFlow, FlowNodeSpec, FlowResult, FlowSpec } from './flow-options.interface.js';
import type { FlowState } from '../records/flow-records.js';
import type { TaskContext } from '../task/task-context.js';

interface PreparedRun {
  readonly run: NewRun;
  readonly definition: EnqueueTarget;
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
export class TaskQueue implements BeforeApplicationShutdown {
  private readonly stores: StoreCoalescer;
  /** Created by the first `waitFor` or waitable enqueue: an application that never waits pays nothing. */
  private runWaiter: Waiter | undefined;
  private readonly targets: EnqueueTargets;
  /** Names the runs Threadmill names: the backend's routing (a partitioned backend codes the partition in the id). */
  private readonly newId: (key?: string) => string;
  private readonly flowEnqueue: FlowEnqueue;

  constructor(
    registry: TaskRegistry,
    @Inject(TaskBackend) private readonly backend: ProducerStore,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
    private readonly events: RunEvents,
  ) {
    this.stores = new StoreCoalescer(backend);
    this.newId = (key) => backend.newRunId(key);
    this.targets = new EnqueueTargets(registry);
    this.flowEnqueue = new FlowEnqueue(
      backend.flows,
      this.newId,
      (item, newId) => {
        const { run, definition } = this.prepare(item, undefined, traceHeaders(), newId);
        return { run, taskName: definition.name };
      },
      (queue, task) => {
        if (this.events.active) this.events.enqueued(queue, task, 1);
      },
      (id, nodes) => this.events.flowEnqueued({ id, nodes }),
    );
  }

  /**
   * Enqueues a flow (`docs/flows.md`): runs by name, each waiting for the
   * nodes its `after` names until they settle as each edge's `onFailure`
   * says (WAITING until then). The whole flow is checked before anything is
   * written, and stored at once: every node or none, and no node runs before
   * the flow is whole.
   * @returns the flow's id and each node's run id by name
   * @throws InvalidFlowError naming what is wrong (FlowCycleError for a cycle); nothing is stored
   */
  enqueueFlow(spec: FlowSpec): Promise<EnqueuedFlow> {
    return this.flowEnqueue.enqueue(spec);
  }

  /** Enqueues a chain: each run waits for the one before it and reads its result (`context.dependencies()`). */
  enqueueChain(items: readonly FlowNodeSpec[], options?: { partitionKey?: string }): Promise<EnqueuedFlow> {
    return this.flowEnqueue.chain(items, options?.partitionKey);
  }

  /** Enqueues a batch: independent runs, and callbacks run once when they have all settled (`onComplete`) or succeeded (`onSuccess`). */
  enqueueBatch(spec: BatchSpec): Promise<EnqueuedFlow> {
    return this.flowEnqueue.batch(spec);
  }

  /**
   * Adds runs to the flow of the node that `context` runs, from inside it (as
   * a batch's runs add runs to their open batch): each runs now, and every
   * dependent of that node still WAITING (a batch's callbacks) waits for
   * them too, by the policy of its edge from the node. Fenced by the
   * attempt's lease. A node that runs again (at-least-once) adds them again:
   * add from code that is idempotent, or once per run (check `context.attempt`).
   * @returns each new node's run id by name
   * @throws LeaseLostError when the attempt's lease no longer holds (nothing is added)
   * @throws InvalidFlowError for bad nodes, or when the run is no flow node
   */
  addToFlow(context: TaskContext, nodes: Readonly<Record<string, FlowNodeSpec>>): Promise<Record<string, string>> {
    const caller = context.leaseRef();
    return this.flowEnqueue.extend(caller, nodes, () => this.backend.newRunIdBeside(caller.id));
  }

  /**
   * Cancels flow `id`: every node without an outcome ends CANCELLED (running
   * ones are aborted as `cancel` aborts a run); nodes that ended stay as
   * they are. Returns how many nodes this call cancelled (0 for a call whose
   * first reply was lost and that was sent again: the first copy cancelled
   * them), and the flow's state.
   * @throws TaskResultNotFoundError when no flow has this id (or it ended and expired)
   */
  cancelFlow(id: string): Promise<{ cancelled: number; state: FlowState }> {
    return this.flowEnqueue.cancel(id);
  }

  /**
   * Resolves once every node of flow `id` has settled (nodes added by
   * `addToFlow` included), with the flow's end state and each node's result
   * by name; waits as `waitFor` does (no polling).
   * @throws TaskResultNotFoundError when no flow has this id (or it ended and expired)
   */
  waitForFlow(id: string, options?: Pick<WaitOptions, 'timeoutMs' | 'signal'>): Promise<FlowResult> {
    return this.flowEnqueue.wait(id, (node) => this.waitFor(node, options));
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
  /**
   * Enqueues the task of a contract (see `defineTask`), typed from it: the
   * way for a producer to enqueue a worker's task without its code.
   */
  enqueue<A extends readonly unknown[], R>(
    contract: TaskContract<A, R>,
    args: A,
    options?: EnqueueOptions,
  ): Promise<TaskResult<R>>;
  /**
   * Enqueues the task named `name`: registered in this application, or
   * another application's (its runs go to `options.queue`, else the queue of
   * a contract of that name, else `'default'`).
   */
  enqueue<R = unknown>(name: string, args: readonly unknown[], options?: EnqueueOptions): Promise<TaskResult<R>>;
  enqueue(
    task: string | Type | TaskContract,
    methodOrArgs: string | readonly unknown[],
    argsOrOptions?: readonly unknown[] | EnqueueOptions,
    maybeOptions?: EnqueueOptions,
  ): Promise<TaskResult> {
    // enqueueMany's path for one run, without its arrays and async frames:
    // each async function a call passes through leaves it garbage
    // (docs/optimisations.md, step 43).
    let prepared: PreparedRun;
    let waitable: string[] | undefined;
    try {
      const item: EnqueueManyItem =
        typeof task !== 'function'
          ? withOptions(
              { task, args: methodOrArgs as readonly unknown[] } as EnqueueManyItem,
              argsOrOptions as EnqueueOptions,
            )
          : withOptions(
              { task, method: methodOrArgs as string, args: argsOrOptions as readonly unknown[] },
              maybeOptions,
            );
      prepared = this.prepare(item, undefined, traceHeaders());
      if (item.waitable !== undefined) waitable = waitableIds([item], [prepared]);
    } catch (error) {
      // Rejected, not thrown: bad input fails the returned promise, as it
      // would from an async function.
      return Promise.reject(error);
    }
    const run = prepared.run;
    return (waitable ? this.storeWaitable(waitable, () => this.stores.store([run])) : this.stores.store([run])).then(
      ({ now, created, deduplicated }) =>
        created[0]
          ? this.created(prepared, now)
          : deduplicated?.[0] !== undefined
            ? this.getResult(deduplicated[0]).then(markDeduplicated)
            : this.getResult(prepared.run.id),
    );
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
    const headers = traceHeaders();
    const prepared = items.map((item, index) => this.prepare(item, items.length > 1 ? index : undefined, headers));
    // Only ids a caller chose can repeat: Threadmill's are ULIDs, unique by construction.
    checkDistinctIds(prepared, ({ run }) => (run.idempotent ? run.id : undefined));
    const waitable = waitableIds(items, prepared);
    const results = nulls(items.length);
    const store = () => this.stores.store(prepared.map((p) => p.run));
    await this.settle(prepared, await (waitable ? this.storeWaitable(waitable, store) : store()), results, 0);
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
    checkSignatures(items, this.targets);
    const results = nulls(items.length);
    const headers = traceHeaders();
    const chunks: Promise<void>[] = [];
    let failure: { error: unknown } | undefined;
    // Chunks stored but not confirmed by replicas (confirmEnqueues): their runs are results all the same.
    const unconfirmed: UnconfirmedEnqueueError[] = [];
    for (let first = 0; first < items.length && !failure; first += PIPELINE_CHUNK) {
      const prepared: PreparedRun[] = [];
      let waitable: string[] | undefined;
      try {
        for (let i = first; i < Math.min(items.length, first + PIPELINE_CHUNK); i++) {
          prepared.push(this.prepare(items[i]!, i, headers));
        }
        waitable = waitableIds(items, prepared, first);
        // Registered before the chunk goes out, which keeps the chunks in order.
        if (waitable) await this.waiter.register(waitable);
      } catch (error) {
        failure = { error };
        break;
      }
      const storing = this.backend.store(prepared.map((p) => p.run)).catch((error: unknown) => {
        if (!(error instanceof UnconfirmedEnqueueError) || !error.outcome) throw error;
        unconfirmed.push(error);
        return error.outcome;
      });
      chunks.push(
        (waitable ? this.afterWaitableStore(waitable, storing) : storing)
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
    const unconfirmedIds = unconfirmed.flatMap((error) => error.unconfirmedIds);
    if (!failure) {
      if (unconfirmed.length === 0) return results as TaskResult[];
      throw UnconfirmedEnqueueError.combine(
        (results as TaskResult[]).map((result) => result.id),
        unconfirmed,
      );
    }
    if (results.every((result) => result === null)) throw failure.error;
    throw new EnqueueIncompleteError(results, failure.error, unconfirmedIds);
  }

  /**
   * Writes the results of stored runs into `results` from `offset` on, and
   * announces the new ones. Runs whose caller-chosen id existed come back as
   * stored (one read for all of them), after the new ones are written.
   */
  private async settle(
    prepared: readonly PreparedRun[],
    { now, created, deduplicated }: StoreOutcome,
    results: (TaskResult | null)[],
    offset: number,
  ): Promise<void> {
    let existingIds: string[] | undefined;
    // The run each item that stored nothing stands for: its own id's, or its dedupe key's.
    const existingId = (i: number): string => deduplicated?.[i] ?? prepared[i]!.run.id;
    prepared.forEach((entry, i) => {
      if (created[i]) results[offset + i] = this.created(entry, now);
      else (existingIds ??= []).push(existingId(i));
    });
    if (!existingIds) return;
    const existing = await this.loadExisting([...new Set(existingIds)]);
    prepared.forEach((_, i) => {
      if (created[i]) return;
      const result = existing.get(existingId(i))!;
      results[offset + i] = deduplicated?.[i] !== undefined ? markDeduplicated(result) : result;
    });
  }

  /**
   * Resolves with run `id`'s result once it settles (SUCCESSFUL, FAILED,
   * QUARANTINED or CANCELLED: check `status`), without polling: the process registers the
   * run and reads one feed of settled runs on one connection, however many
   * calls wait. Resolves at once when the run has settled already; rides out
   * a Redis restart or a dropped connection.
   *
   * A run whose result is not kept (`resultTtlMs: 0`) can be waited for only
   * when it was enqueued with `waitable: true` (in this process).
   * @throws TaskResultNotFoundError when no run has the id (never enqueued, or
   *   its result expired), or when it was dequeued or purged while waited for
   * @throws WaitTimeoutError after `options.timeoutMs` (the run is untouched)
   * @throws the reason of `options.signal` once it aborts (the run is untouched)
   *
   * `options.onProgress` and `options.onLog` are told what running attempts
   * of the run report while the call waits (see `TaskContext.progress`).
   * @throws InvalidWaitError for a bad id or option
   */
  waitFor<R = unknown>(id: string, options?: WaitOptions): Promise<TaskResult<R>> {
    const problem = waitCallProblem(id, options);
    if (problem) return Promise.reject(problem);
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const listeners = options?.onProgress || options?.onLog ? options : undefined;
    return this.waiter.wait<R>(id, options?.timeoutMs, signal, listeners);
  }

  /**
   * Stops waiting: pending `waitFor` calls reject, and the reader's
   * connection closes. Before the shutdown hooks, since the backend's
   * connections close in one of them, in whichever module Nest shuts down
   * first (both are global): a reader still blocked then would fail and warn.
   */
  beforeApplicationShutdown(): void {
    this.runWaiter?.close();
  }

  private get waiter(): Waiter {
    return (this.runWaiter ??= this.backend.createWaiter());
  }

  /**
   * Stores runs of a waitable enqueue: `ids` are registered for waiting
   * first, so that they are published however soon they settle.
   */
  private async storeWaitable(ids: readonly string[], store: () => Promise<StoreOutcome>): Promise<StoreOutcome> {
    await this.waiter.register(ids);
    return this.afterWaitableStore(ids, store());
  }

  /** Keeps the registrations of stored waitable runs, and drops those of a store that failed. */
  private afterWaitableStore(ids: readonly string[], storing: Promise<StoreOutcome>): Promise<StoreOutcome> {
    return storing.then(
      (outcome) => {
        this.waiter.stored(ids);
        return outcome;
      },
      (error: unknown) => {
        // Runs stored but not confirmed by replicas are stored: they may be waited for.
        if (error instanceof UnconfirmedEnqueueError) this.waiter.stored(ids);
        else this.waiter.forget(ids);
        throw error;
      },
    );
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

  /**
   * Cancels run `id`, from any process: a pending run (READY, or deferred) is
   * withdrawn at once; a running run's lease is revoked, and its worker aborts
   * the attempt's `AbortSignal` with `CancelledError` at its next lease
   * renewal (within a third of the lease TTL). Either way the run ends
   * CANCELLED at once, is not retried, and whatever its attempt returns later
   * is discarded. Cancelling a CANCELLED run changes nothing (it answers
   * `cancelled: false`), so a cancel may be repeated safely.
   * @throws TaskResultNotFoundError when no run has this id (never enqueued, or its result expired)
   * @throws InvalidRunStateError when the run already finished otherwise (SUCCESSFUL, FAILED, QUARANTINED)
   */
  cancel(id: string): Promise<CancelOutcome> {
    return cancelRun(this.backend, id);
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

  private prepare(
    item: EnqueueManyItem,
    index: number | undefined,
    headers: string | undefined,
    newId: (key?: string) => string = this.newId,
  ): PreparedRun {
    if (item === null || typeof item !== 'object') {
      throw new InvalidEnqueueError(
        `item${index === undefined ? '' : ` (item ${index})`}`,
        'each item must be an object { task, args, ...options }.',
      );
    }
    const definition = this.targets.resolve(item);
    const { args } = item;
    if (!Array.isArray(args)) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `args must be an array of the task's arguments, got ${describeValue(args)}.`,
      );
    }
    if (definition.kind === 'handler' && args.length > 1) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `it is a Nest handler, which takes one payload: pass args [payload], got ${args.length} arguments.`,
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
    const run = buildRun(definition, item, index, this.options, headers, newId);
    return { run, definition, args };
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
      progress: undefined,
      logs: [],
    };
  }
}

/** The result of an enqueue that its dedupe key answered with run `result`. */
function markDeduplicated(result: TaskResult): TaskResult {
  return { ...result, deduplicated: true };
}

/** One `null` per item, to be replaced by each item's result. */
function nulls(count: number): (TaskResult | null)[] {
  return Array.from({ length: count }, () => null);
}
