import type { Type } from '@nestjs/common';
import type { LeasedRun } from '../backend/task-backend.js';
import type { TaskLimit } from '../limits/task-limit.js';
import type { ResultTtlByOutcome } from '../records/result-ttl.js';
import type { RunPayload } from '../codec/run-payload.js';
import type { RetryPolicy } from '../retry/retry-policy.js';
import type { RunReporter } from './run-reporter.js';
import type { TaskContext } from './task-context.js';
import type { TaskSignature } from './task-signature.js';

/** Builds the context an attempt receives. */
export type ContextFactory = (
  run: LeasedRun,
  payload: RunPayload,
  signal: AbortSignal,
  reporter?: RunReporter,
) => TaskContext;

/**
 * A discovered task: everything needed to enqueue and to execute it. Either a
 * `@Task()` method, called with the stored arguments, or a Nest handler
 * (`@EventPattern`, `@MessagePattern`) served by `ThreadmillServer`, called
 * through Nest's pipeline with one payload and its `ThreadmillContext`.
 */
export interface TaskDefinition {
  readonly kind: 'method' | 'handler';
  readonly name: string;
  readonly queue: string;
  readonly priority: number;
  readonly retry: RetryPolicy | undefined;
  /** Lease override; undefined means the module's `leaseTtlMs`. */
  readonly leaseTtlMs: number | undefined;
  /** Per outcome, how long its finished runs are kept; undefined (or an outcome left out) means the module's `resultTtlMs`. */
  readonly resultTtlMs: ResultTtlByOutcome | undefined;
  /** Longest an attempt may run (ms), or undefined for no limit. */
  readonly timeoutMs: number | undefined;
  /** Its limit per limit group (`@Task({ limit })`), or undefined. */
  readonly limit?: TaskLimit;
  /** The provider class that declares it. */
  readonly target: Function;
  readonly methodName: string;
  /** `Class#method`, for messages. */
  readonly site: string;
  /** The method bound to its provider instance. */
  readonly handler: (...args: unknown[]) => unknown;
  /** Index of the context parameter, or -1 when the method takes none (a handler's is 1). */
  readonly contextIndex: number;
  /** Builds the context of an attempt, when `contextIndex` is not -1. */
  readonly createContext: ContextFactory;
  /**
   * Errors that end the run FAILED without asking the retry policy, besides
   * `NonRetryableError`: for a handler, a payload its pipes reject or a call
   * its guards refuse, which would be refused again.
   */
  readonly isRefusal?: (error: Error) => boolean;
  /** The DTO class of each parameter (validated at enqueue and before execution), or undefined. */
  readonly argumentTypes: readonly (Type | undefined)[];
  /** The arguments a `@Task()` method accepts, checked at enqueue; undefined for a handler (its pipes check its payload). */
  readonly signature?: TaskSignature;
}
