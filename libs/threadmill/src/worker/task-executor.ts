import { Injectable, Logger } from '@nestjs/common';
import { encodeJson } from '../codec/json-codec.js';
import type { LeasedRun, Outcome } from '../backend/task-backend.js';
import { decodeRunPayload } from '../queue/run-payload.js';
import type { TaskResult } from '../queue/task-result.js';
import { taskResultFromLease } from '../queue/task-result.factory.js';
import { retryDelay, type RetryPolicy } from '../retry/retry-policy.js';
import { TaskContext } from '../task/task-context.js';
import { TaskRegistry } from '../task/task.registry.js';
import { asError, toTaskError } from './task-error.js';

/**
 * Runs one leased attempt: decodes the stored payload, calls the task method
 * on its provider with the stored arguments (and its context), and turns what
 * happened into an {@link Outcome}, asking the retry policy after a failure.
 * It never throws: every failure becomes an outcome.
 */
@Injectable()
export class TaskExecutor {
  private readonly logger = new Logger('Threadmill');

  constructor(private readonly registry: TaskRegistry) {}

  async execute(run: LeasedRun, signal: AbortSignal): Promise<Outcome> {
    let result: TaskResult | undefined;
    let policy: RetryPolicy | undefined;
    try {
      const payload = decodeRunPayload(run.payload);
      result = taskResultFromLease(run, payload);
      const definition = this.registry.get(payload.task);
      policy = definition.retry;
      const args = [...payload.args];
      if (definition.contextIndex >= 0) {
        while (args.length < definition.contextIndex) args.push(undefined);
        args[definition.contextIndex] = new TaskContext(result, signal);
      }
      const returned = await definition.handler(...args);
      return {
        kind: 'successful',
        returnValue: returned === undefined ? undefined : encodeJson(returned, 'return value'),
      };
    } catch (thrown) {
      return this.failure(run, result, policy, asError(thrown));
    }
  }

  /** The outcome of a failed attempt; also used by the broker for expired leases. */
  failure(run: LeasedRun, result: TaskResult | undefined, policy: RetryPolicy | undefined, error: Error): Outcome {
    const taskError = toTaskError(error, run.attempts);
    if (!result || !policy) return { kind: 'failed', error: taskError };
    try {
      const delayMs = retryDelay(policy, { error, attempt: run.attempts, result });
      return delayMs === null ? { kind: 'failed', error: taskError } : { kind: 'retry', error: taskError, delayMs };
    } catch (policyError) {
      this.logger.error(
        `Retry policy of ${result.taskName} threw for run ${run.id}; finishing the run FAILED: ${asError(policyError).message}`,
      );
      return { kind: 'failed', error: taskError };
    }
  }
}
