import { HttpException } from '@nestjs/common';
import { RpcException } from '@nestjs/microservices';

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
