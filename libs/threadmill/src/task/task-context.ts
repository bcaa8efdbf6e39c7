import { RetryAfter } from './retry-after.js';
import type { LeasedRun, LeaseRef } from '../backend/task-backend.js';
import { encodeJson } from '../codec/json-codec.js';
import { InvalidProgressError } from '../errors/invalid-progress.error.js';
import type { RunReporter } from './run-reporter.js';
import { MAX_LOG_LINE_CHARS, MAX_PROGRESS_CHARS } from '../records/run-report-limits.js';
import type { RunPayload } from '../codec/run-payload.js';
import type { TaskResult } from '../records/task-result.js';
import { taskResultFromLease } from '../codec/task-result.factory.js';
import { flowDependency, type FlowDependency } from './flow-dependency.js';

/**
 * What a running task knows about its run. Declare a last parameter of this
 * type on a `@Task()` method to receive it; a Nest handler receives its
 * subclass `ThreadmillContext` through `@Ctx()`.
 *
 * Built for every attempt that takes one, so it holds only what the worker
 * already has: the run record ({@link result}) is assembled on first read.
 */
export class TaskContext {
  private record: TaskResult | undefined;

  /** @internal Built by the worker for each attempt. */
  constructor(
    private readonly run: LeasedRun,
    private readonly payload: RunPayload,
    /**
     * Aborted when the attempt must stop early: its lease was lost (another
     * attempt may already run) or the worker is stopping hard. Pass it to
     * fetch, timers and child processes.
     */
    readonly signal: AbortSignal,
    /** Where `progress` and `log` go; none for a context made by {@link of}. */
    private readonly reporter?: RunReporter,
  ) {}

  /**
   * A context for a given run record, for calling a task method in a unit
   * test as a worker would (`signal` aborted plays a lost lease).
   */
  static of(result: TaskResult, signal: AbortSignal = new AbortController().signal): TaskContext {
    // With the record set, the getters read only these fields of the lease and the payload.
    const run: Pick<LeasedRun, 'id' | 'queue' | 'attempts'> = result;
    const payload: Pick<RunPayload, 'task'> = { task: result.taskName };
    const context = new TaskContext(run as LeasedRun, payload as RunPayload, signal);
    context.record = result;
    return context;
  }

  /** The run being executed, as of this attempt's claim. */
  get result(): TaskResult {
    return (this.record ??= taskResultFromLease(this.run, this.payload));
  }

  /**
   * Ends this attempt and puts the run back for `ms` (an HTTP 429's
   * Retry-After, say) without spending a retry: the attempt is not charged
   * (`attempts` stays as it was, so the next attempt has this one's number
   * again), no error is recorded, the retry policy is not asked, and the run
   * waits deferred, then runs again. Throws, so `return context.retryAfter(ms)`
   * or `throw` it on; a task that catches it must rethrow it. A task without a
   * retry policy may use it too. See `docs/rate-limits.md`.
   */
  retryAfter(ms: number): never {
    throw RetryAfter.of(this.run.id, ms);
  }

  /** @internal The lease this attempt holds: what a call made for it (`TaskQueue.addToFlow`) is fenced by. */
  leaseRef(): LeaseRef {
    return { id: this.run.id, queue: this.run.queue, token: this.run.token };
  }

  /** The run id. Use it as an idempotency key: a run may execute more than once. */
  get id(): string {
    return this.run.id;
  }

  /** This attempt's number, 1 for the first. */
  get attempt(): number {
    return this.run.attempts;
  }

  /** The queue the run was claimed from. */
  get queue(): string {
    return this.run.queue;
  }

  /** The name the run was enqueued under: the task's name, or the handler's pattern. */
  get taskName(): string {
    return this.payload.task;
  }

  /**
   * Reports how far the attempt got: `value` (any JSON value, e.g.
   * `{ done: 40, of: 100 }`) replaces the run's `progress`, which
   * `getResult` returns, the dashboard and the inspector show, and
   * `waitFor({ onProgress })` is told. Writes are coalesced: values reported
   * faster than a round trip go out as the latest one.
   *
   * The attempt's outcome is acknowledged only after its writes landed, so
   * a write made before the task returns is never lost to its own
   * acknowledgement; there is no need to await it. Await it to know it was
   * stored: it rejects with `LeaseLostError` when the lease no longer holds
   * (nothing is stored for an attempt that lost its run), or with the Redis
   * error of a call that failed (writes are not retried). Unawaited, a
   * refused write is dropped silently.
   * @throws InvalidProgressError (at once) when `value` is not JSON or its JSON is longer than 16,384 characters
   */
  progress(value: unknown): Promise<void> {
    let json: string | undefined;
    try {
      json = encodeJson(value, 'progress') as string | undefined;
    } catch (error) {
      throw new InvalidProgressError(this.id, this.taskName, (error as Error).message, { cause: error });
    }
    if (json === undefined) {
      throw new InvalidProgressError(this.id, this.taskName, `${typeof value} is not a JSON value`);
    }
    if (json.length > MAX_PROGRESS_CHARS) {
      throw new InvalidProgressError(
        this.id,
        this.taskName,
        `its JSON is ${json.length} characters, more than the ${MAX_PROGRESS_CHARS} a run keeps`,
      );
    }
    return this.reporter ? this.reporter.progress(this.run, json) : Promise.resolve();
  }

  /**
   * What this flow node's dependencies ended with (`docs/flows.md`), in the
   * order its `after` lists them: each one's name, status, and its return
   * value (`result`) or last error (`error`). A failure its edge ignores
   * (`onFailure: 'ignore'` or `'continue'`) is listed with its error; one
   * whose edge is `'remove'` is left out; under `'continue'` a dependency
   * may still be PENDING. Read from Redis at each call (one round trip);
   * [] for a run that is no flow node. Type `R` for results of one type.
   */
  async dependencies<R = unknown>(): Promise<FlowDependency<R>[]> {
    if (!this.reporter) return [];
    const stored = await this.reporter.dependencies(this.run.id);
    return stored.flatMap((dependency) => flowDependency<R>(dependency));
  }

  /**
   * Appends `line` to the run's log: the run keeps its last 100 lines (of
   * all its attempts together), which `getResult` returns, the dashboard and
   * the inspector show, and `waitFor({ onLog })` is told. A line break inside
   * `line` becomes a space (one call, one line), and a line longer than 1,000
   * characters is cut to 999 and ends with `…`. Coalesced and awaitable as
   * {@link progress} is.
   */
  log(line: string): Promise<void> {
    const text = logLine(line);
    return this.reporter ? this.reporter.log(this.run, text) : Promise.resolve();
  }
}

/** `line` as one stored log line: line breaks as spaces, at most `MAX_LOG_LINE_CHARS` characters. */
function logLine(line: string): string {
  let text = String(line).replace(/\r\n|[\r\n]/g, ' ');
  if (text.length > MAX_LOG_LINE_CHARS) {
    let end = MAX_LOG_LINE_CHARS - 1;
    // Never cut a surrogate pair in two.
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
    text = text.slice(0, end) + '…';
  }
  return text;
}
