import type { Type } from '@nestjs/common';
import type { RetryPolicy } from '../retry/retry-policy.js';

/** A discovered `@Task()`: everything needed to enqueue and to execute it. */
export interface TaskDefinition {
  readonly name: string;
  readonly queue: string;
  readonly priority: number;
  readonly retry: RetryPolicy | undefined;
  /** Lease override; undefined means the module's `leaseTtlMs`. */
  readonly leaseTtlMs: number | undefined;
  /** The provider class that declares it. */
  readonly target: Function;
  readonly methodName: string;
  /** `Class#method`, for messages. */
  readonly site: string;
  /** The method bound to its provider instance. */
  readonly handler: (...args: unknown[]) => unknown;
  /** Index of the `TaskContext` parameter, or -1 when the method takes none. */
  readonly contextIndex: number;
  /** The DTO class of each parameter (validated at enqueue and before execution), or undefined. */
  readonly argumentTypes: readonly (Type | undefined)[];
}
