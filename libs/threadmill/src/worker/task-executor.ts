import { RetryAfter } from '../task/retry-after.js';
import { Injectable } from '@nestjs/common';
import { context } from '@opentelemetry/api';
import { isObservable, lastValueFrom, type Observable } from 'rxjs';
import { encodeJson } from '../codec/json-codec.js';
import type { LeasedRun, Outcome } from '../backend/task-backend.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { TaskTimeoutError } from '../errors/task-timeout.error.js';
import { decodeRunPayload, type RunPayload } from '../codec/run-payload.js';
import type { ResultTtlByOutcome } from '../records/result-ttl.js';
import type { TaskResult } from '../records/task-result.js';
import { taskResultFromLease } from '../codec/task-result.factory.js';
import { retryDelay, type RetryPolicy } from '../retry/retry-policy.js';
import { checkArguments } from '../task/task-arguments.js';
import type { TaskDefinition } from '../task/task-definition.js';
import { TaskRegistry } from '../task/task.registry.js';
import { AttemptTracer, type AttemptSpan } from '../tracing/attempt-tracer.js';
import type { RunReporter } from '../task/run-reporter.js';
import { asError, toTaskError } from './task-error.js';
import { UnknownTaskNotice } from './unknown-task-notice.js';

/** The outcome of every attempt that returned nothing (shared: outcomes are never mutated). */
const SUCCESSFUL: Outcome = Object.freeze({ kind: 'successful', returnValue: undefined });

/** A leased run whose payload could be read and whose task is registered. */
export interface ReadableRun {
  readonly payload: RunPayload;
  readonly definition: TaskDefinition;
}

/** A leased run that cannot be executed as stored: its quarantine, and its task's name when the payload could be read. */
export interface UnrunnableRun {
  readonly outcome: Outcome;
  readonly task: string | undefined;
}

/** How an attempt ended, and the task it ran (for telemetry). */
export interface Attempt {
  readonly outcome: Outcome;
  /** The stored task name (registered or not), or `undefined` when the payload could not be read. */
  readonly task: string | undefined;
  /** The task's own result TTL per outcome (`@Task({ resultTtlMs })`), if it has one. */
  readonly resultTtlMs: ResultTtlByOutcome | undefined;
}

/**
 * Told how an attempt ended that went on after `execute` returned (its
 * handler returned a promise), with the lease it ran under.
 */
export type AttemptEnded<L> = (lease: L, attempt: Attempt) => void;

/** What `execute` needs of a lease: the attempt's signal, and a way to abort it. */
export interface AttemptLease {
  readonly signal: AbortSignal;
  abort(reason: Error): void;
}

/**
 * Told of each attempt that went on after `execute` returned. `ended` is told
 * once its handler settled; `timedOut`, first, when it ran past its task's
 * `timeoutMs`: its signal is aborted and the outcome given is the timeout's
 * failure, and `ended`, told later with what the handler did, is then told
 * only that its slot is free (the outcome it gets is to be discarded).
 */
export interface AttemptWatchers<L> {
  readonly ended: AttemptEnded<L>;
  readonly timedOut: AttemptEnded<L>;
  /** Told right before the task's code runs (its arguments read and checked). */
  readonly started?: (lease: L, task: string) => void;
}

/**
 * Runs one leased attempt: decodes the stored payload, calls the task method
 * on its provider with the stored arguments (and its context), and turns what
 * happened into an {@link Outcome}, asking the retry policy after a failure.
 * It never throws: every failure becomes an outcome, and a run that cannot be
 * executed as stored is quarantined rather than retried or dropped.
 */
@Injectable()
export class TaskExecutor {
  constructor(
    private readonly registry: TaskRegistry,
    private readonly tracer = new AttemptTracer(false),
    /** Where attempts' `context.progress` and `context.log` go; none for an executor that runs no task (the broker's). */
    private readonly reporter?: RunReporter,
    private readonly unknownTasks = new UnknownTaskNotice(),
  ) {}

  /**
   * Reads a leased run: its payload and its task. Returns the quarantine
   * outcome instead when either cannot be read.
   */
  read(run: LeasedRun): ReadableRun | UnrunnableRun {
    let payload: RunPayload;
    try {
      payload = decodeRunPayload(run.payload);
    } catch (error) {
      const outcome: Outcome = {
        kind: 'quarantine',
        reason: 'unreadable-payload',
        message:
          `The stored payload cannot be read (${asError(error).message}). It was not written by this ` +
          'version of Threadmill, or was altered in Redis. Inspect it; requeue only after restoring a valid payload.',
      };
      return { outcome, task: undefined };
    }
    const task = payload.task;
    const definition = this.registry.find(task);
    if (!definition) {
      this.unknownTasks.unknown(task, run.queue, this.registry.names().length);
      const outcome: Outcome = {
        kind: 'quarantine',
        reason: 'unknown-task',
        message:
          `Task "${task}" is not registered in this worker application: its module is not imported into the ` +
          "worker's module, or a deploy removed or renamed it. Deploy a worker that registers it, then requeue the run.",
      };
      return { outcome, task };
    }
    return { payload, definition };
  }

  /**
   * Runs the attempt. The run's context is built only for a task that takes
   * one (a handler always does), and its {@link TaskResult} only when read or
   * after a failure: most
   * tasks need neither, and they are the bulk of the per-run allocations. An
   * attempt whose handler returns anything but a promise ends synchronously
   * and is returned; one that returns a promise costs one `then` on it, which
   * tells `ended`: a worker runs thousands of attempts a second, and each
   * promise layer of ours would be garbage (and a microtask) per run.
   * @param lease read for its `signal` only when the task takes a context,
   *   aborted when the attempt times out
   * @returns how the attempt ended, or `undefined` when `watchers` will be told
   */
  execute<L extends AttemptLease>(run: LeasedRun, lease: L, watchers: AttemptWatchers<L>): Attempt | undefined {
    const readable = this.read(run);
    if ('outcome' in readable) return { ...readable, resultTtlMs: undefined };
    const { payload, definition } = readable;
    const task = payload.task;
    const resultTtlMs = definition.resultTtlMs;
    let args = payload.args;
    if (definition.kind === 'handler' && args.length > 1) {
      const outcome: Outcome = {
        kind: 'quarantine',
        reason: 'invalid-arguments',
        message:
          `${definition.name} is a Nest handler, which takes one payload, but the run holds ${args.length} arguments. ` +
          'Enqueue it with a single argument (client.emit(pattern, payload) or enqueue(name, [payload])), then requeue or delete this run.',
      };
      return { outcome, task, resultTtlMs };
    }
    if (definition.argumentTypes.some(Boolean)) {
      const checked = checkArguments(definition.argumentTypes, args);
      if (checked.problems.length > 0) {
        const outcome: Outcome = {
          kind: 'quarantine',
          reason: 'invalid-arguments',
          message:
            `The stored arguments of ${definition.name} fail validation: ${checked.problems.join(' | ')}. ` +
            'The task or its DTOs changed since the run was enqueued; make them accept the stored arguments, then requeue.',
        };
        return { outcome, task, resultTtlMs };
      }
      args = checked.args;
    }
    watchers.started?.(lease, task);
    const traced = this.tracer.start(run, payload);
    let returned: unknown;
    try {
      if (definition.contextIndex >= 0) {
        while (args.length < definition.contextIndex) args.push(undefined);
        args[definition.contextIndex] = definition.createContext(run, payload, lease.signal, this.reporter);
      }
      // Traced, the task's code runs with its attempt's span active, so its own spans are children of it.
      returned = traced
        ? context.with(traced.context, definition.handler, undefined, ...args)
        : definition.handler(...args);
    } catch (thrown) {
      const attempt = { outcome: this.thrown(run, payload, definition, thrown), task, resultTtlMs };
      return this.afterReports(run, lease, watchers.ended, this.traced(traced, attempt));
    }
    if (!isObservable(returned) && !isThenable(returned)) {
      const attempt = { outcome: this.returned(run, payload, definition, returned), task, resultTtlMs };
      return this.afterReports(run, lease, watchers.ended, this.traced(traced, attempt));
    }
    if (traced) watchers = this.spanWatchers(traced, watchers);
    let ended =
      definition.timeoutMs === undefined ? watchers.ended : this.timed(run, payload, definition, lease, watchers);
    if (definition.contextIndex >= 0 && this.reporter) ended = this.endedAfterReports(run, ended);
    if (isObservable(returned)) {
      this.follow(run, payload, definition, returned, lease, ended);
      return undefined;
    }
    // `ended` never throws (the consumer catches its own bugs), so the promise
    // `then` returns never rejects.
    void Promise.resolve(returned).then(
      (value) =>
        isObservable(value)
          ? this.follow(run, payload, definition, value, lease, ended)
          : ended(lease, { outcome: this.returned(run, payload, definition, value), task, resultTtlMs }),
      (thrown: unknown) => ended(lease, { outcome: this.thrown(run, payload, definition, thrown), task, resultTtlMs }),
    );
    return undefined;
  }

  /**
   * An attempt that ended at once: returned, unless progress or log writes of
   * its run are still on their way, which its acknowledgement waits for
   * (an acknowledgement first would release the lease, and the writes be
   * refused); `ended` is then told once they landed.
   */
  private afterReports<L>(run: LeasedRun, lease: L, ended: AttemptEnded<L>, attempt: Attempt): Attempt | undefined {
    const settled = this.reporter?.settled(run);
    if (!settled) return attempt;
    void settled.then(() => ended(lease, attempt));
    return undefined;
  }

  /** `ended`, told once the run's progress and log writes landed (at once when none is on its way). */
  private endedAfterReports<L>(run: LeasedRun, ended: AttemptEnded<L>): AttemptEnded<L> {
    return (lease, attempt) => {
      const settled = this.reporter!.settled(run);
      if (settled) void settled.then(() => ended(lease, attempt));
      else ended(lease, attempt);
    };
  }

  /** Ends the attempt's span, if it has one, with its outcome; returns the attempt. */
  private traced(traced: AttemptSpan | undefined, attempt: Attempt): Attempt {
    if (traced) this.tracer.end(traced, attempt.outcome);
    return attempt;
  }

  /** `watchers` that end the attempt's span first, once: at its timeout, or when its handler settled. */
  private spanWatchers<L>(traced: AttemptSpan, watchers: AttemptWatchers<L>): AttemptWatchers<L> {
    let open = true;
    const close = (attempt: Attempt) => {
      if (open) this.tracer.end(traced, attempt.outcome);
      open = false;
    };
    return {
      ended: (lease, attempt) => {
        close(attempt);
        watchers.ended(lease, attempt);
      },
      timedOut: (lease, attempt) => {
        close(attempt);
        watchers.timedOut(lease, attempt);
      },
    };
  }

  /**
   * Starts the timer of an attempt of a task with a `timeoutMs` that went on
   * after its handler returned (one that returns synchronously cannot be
   * timed: it held the event loop throughout). Returns what to tell when the
   * handler settles: `ended`, with the timer cleared, or after the timeout
   * `ended` still (the slot is free only now), its outcome to be discarded.
   */
  private timed<L extends AttemptLease>(
    run: LeasedRun,
    payload: RunPayload,
    definition: TaskDefinition,
    lease: L,
    { ended, timedOut }: AttemptWatchers<L>,
  ): AttemptEnded<L> {
    const timeoutMs = definition.timeoutMs!;
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      const error = new TaskTimeoutError(run.id, payload.task, timeoutMs);
      lease.abort(error);
      timedOut(lease, {
        outcome: this.thrown(run, payload, definition, error),
        task: payload.task,
        resultTtlMs: definition.resultTtlMs,
      });
    }, timeoutMs);
    // A timer never keeps the process alive: shutdown waits for attempts on its own terms.
    timer.unref();
    return (settledLease, attempt) => {
      if (!expired) clearTimeout(timer);
      ended(settledLease, attempt);
    };
  }

  /**
   * Ends an attempt whose handler returned an Observable (or a promise of
   * one, as Nest's pipeline does when an interceptor or exception filter
   * answers): its last value is the result, an Observable that completes
   * empty returns nothing, and one that errors fails the attempt.
   */
  private follow<L>(
    run: LeasedRun,
    payload: RunPayload,
    definition: TaskDefinition,
    source: Observable<unknown>,
    lease: L,
    ended: AttemptEnded<L>,
  ): void {
    const task = payload.task;
    const resultTtlMs = definition.resultTtlMs;
    void lastValueFrom(source, { defaultValue: undefined }).then(
      (value) => ended(lease, { outcome: this.returned(run, payload, definition, value), task, resultTtlMs }),
      (thrown: unknown) => ended(lease, { outcome: this.thrown(run, payload, definition, thrown), task, resultTtlMs }),
    );
  }

  /** The outcome of a handler that returned `value`: its JSON is the result (a value JSON cannot carry fails the attempt). */
  private returned(run: LeasedRun, payload: RunPayload, definition: TaskDefinition, value: unknown): Outcome {
    if (value === undefined) return SUCCESSFUL;
    try {
      return { kind: 'successful', returnValue: encodeJson(value, 'return value') };
    } catch (error) {
      return this.thrown(run, payload, definition, error);
    }
  }

  private thrown(run: LeasedRun, payload: RunPayload, definition: TaskDefinition, thrown: unknown): Outcome {
    // Not a failure: the run goes back uncharged, whatever the retry policy (see `TaskContext.retryAfter`).
    if (thrown instanceof RetryAfter) {
      return { kind: 'retry', error: toTaskError(thrown, run.attempts), delayMs: thrown.delayMs, uncharged: true };
    }
    return this.failure(
      run,
      taskResultFromLease(run, payload),
      definition.retry,
      asError(thrown),
      definition.isRefusal,
    );
  }

  /**
   * The outcome of a failed attempt: FAILED for a `NonRetryableError` or when
   * the policy says stop, a retry when it gives a delay, and quarantine when
   * the policy itself throws. Also used by the broker for expired leases.
   */
  failure(
    run: LeasedRun,
    result: TaskResult,
    policy: RetryPolicy | undefined,
    error: Error,
    refusal?: (error: Error) => boolean,
  ): Outcome {
    const taskError = toTaskError(error, run.attempts);
    if (!policy || error instanceof NonRetryableError || refusal?.(error)) return { kind: 'failed', error: taskError };
    try {
      const delayMs = retryDelay(policy, { error, attempt: run.attempts, result });
      return delayMs === null ? { kind: 'failed', error: taskError } : { kind: 'retry', error: taskError, delayMs };
    } catch (policyError) {
      const { name, message } = asError(policyError);
      return {
        kind: 'quarantine',
        reason: 'retry-policy-failed',
        message:
          `The retry policy of ${result.taskName} threw ${name}: ${message} (deciding about attempt ${run.attempts}). ` +
          'Fix the policy, then requeue the run.',
        error: taskError,
      };
    }
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
