import { HttpException } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';
import type { TaskError, TaskResult } from '../records/task-result.js';
import { TaskStatus } from '../records/task-status.enum.js';

/** Client errors that ask to be sent again later, not refusals of the input. */
const RETRY_LATER = new Set([408, 429]);

/**
 * Whether a handler's error refuses its input rather than fails: Nest's
 * exceptions for a request it will not serve, which the same payload would
 * meet again on every attempt. A pipe that rejects the payload (the
 * `BadRequestException` of `ValidationPipe`), a guard that refuses
 * (`ForbiddenException`), and any `RpcException` or `HttpException` with a
 * 4xx status other than 408 and 429 end the run FAILED without asking its
 * retry policy.
 */
export function isRefusal(error: Error): boolean {
  if (error instanceof RpcException) return true;
  if (!(error instanceof HttpException)) return false;
  const status = error.getStatus();
  return status >= 400 && status < 500 && !RETRY_LATER.has(status);
}

/**
 * The errors, by class name, of a payload refused as invalid: a pipe's
 * (`ValidationPipe`'s `BadRequestException`, or the `UnprocessableEntityException`
 * of its `errorHttpStatusCode: 422`; `ParseIntPipe` and the like throw the
 * first too). A guard's `ForbiddenException` refuses the caller, not the
 * payload, and is not one of them.
 */
const PAYLOAD_REFUSALS: ReadonlySet<string> = new Set(['BadRequestException', 'UnprocessableEntityException']);

/**
 * The error with which a run's handler refused its payload as invalid, or
 * undefined when the run failed otherwise. Read from the run as stored (its
 * last error's class), since the sender has the run's record, not the
 * handler's exception: a refusal ends the run FAILED at its first attempt
 * (see {@link isRefusal}).
 */
export function payloadRefusal(result: TaskResult): TaskError | undefined {
  const error = result.errors.at(-1);
  if (result.status !== TaskStatus.FAILED || !error) return undefined;
  return PAYLOAD_REFUSALS.has(error.errorClass) ? error : undefined;
}
