import type { TaskStatus } from './task-status.enum.js';

/** One failed attempt of a run, as stored in its error history. */
export interface TaskError {
  /** Class name of the error, e.g. `TypeError` or `AcknowledgementTimeoutError`. */
  readonly errorClass: string;
  readonly message: string;
  readonly stack: string;
  /** The attempt (1-based) that failed. */
  readonly attempt: number;
  /**
   * The reasons the error listed, when it was a Nest exception whose
   * response lists some: `ValidationPipe`'s failed constraints, one each
   * (`message` holds them too, joined). Absent otherwise.
   */
  readonly reasons?: readonly string[];
}

/** Why a run was quarantined. */
export type QuarantineReason =
  'unreadable-payload' | 'unknown-task' | 'invalid-arguments' | 'retry-policy-failed' | 'lease-expired-repeatedly';

/** The quarantine record of a QUARANTINED run. */
export interface QuarantineRecord {
  readonly reason: QuarantineReason;
  /** What exactly is wrong, and what to fix before requeueing. */
  readonly message: string;
  readonly at: Date;
  /** The stored payload, exactly as it is in Redis. */
  readonly payload: string;
}

/**
 * The record of one task run: what was enqueued and everything that has
 * happened to it since. Returned by `enqueue` (status READY), by `getResult`
 * and given to a running task in its {@link TaskContext}.
 */
export interface TaskResult<R = unknown> {
  /** Run id: a ULID unless the producer chose one. */
  readonly id: string;
  /** The flow the run is a node of (`TaskQueue.enqueueFlow`), when it is one. */
  readonly flowId?: string;
  /** The task's name, `ClassName.method` unless `@Task({ name })` says otherwise. */
  readonly taskName: string;
  readonly queue: string;
  /** -100..100; higher runs first. */
  readonly priority: number;
  readonly status: TaskStatus;
  /** The arguments the task is called with. */
  readonly args: readonly unknown[];
  /** When the run was stored (Redis clock). */
  readonly enqueuedAt: Date;
  /** When the run may start at the earliest, for a deferred run or a retry waiting out its backoff. */
  readonly runAfter: Date | null;
  /** When the first attempt was claimed. */
  readonly startedAt: Date | null;
  /** When the latest attempt was claimed. */
  readonly lastAttemptedAt: Date | null;
  readonly finishedAt: Date | null;
  /** Number of attempts so far (claims by a worker). */
  readonly attempts: number;
  /** Identity (`host:pid:slot`) of the worker of each attempt, oldest first. */
  readonly workerIds: readonly string[];
  /** The error of each failed attempt, oldest first. */
  readonly errors: readonly TaskError[];
  /** What the task returned, once SUCCESSFUL. */
  readonly returnValue: R | undefined;
  /**
   * The latest value a running attempt reported with `context.progress(value)`
   * (as JSON carries it), kept after the run finishes; undefined when none was.
   */
  readonly progress: unknown;
  /**
   * The last lines attempts logged with `context.log(line)`, oldest first, at
   * most 100 (of all attempts together), each at most 1,000 characters.
   */
  readonly logs: readonly string[];
  /** Why and when the run was set aside, once QUARANTINED. */
  readonly quarantine?: QuarantineRecord;
  /**
   * Set on what an enqueue with `dedupe` returns when its key held a run:
   * this is that run, and the enqueue stored nothing (a debounce gave it its
   * arguments and due time).
   */
  readonly deduplicated?: true;
}
