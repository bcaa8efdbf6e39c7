import { Catch, HttpStatus, Inject, Logger, Optional, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { throwError, type Observable } from 'rxjs';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { InvalidWaitError } from '../errors/invalid-wait.error.js';
import { RedisUnavailableError } from '../errors/redis-unavailable.error.js';
import { RunFailedError } from '../errors/run-failed.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import { UnknownTaskError } from '../errors/unknown-task.error.js';
import { WaitTimeoutError } from '../errors/wait-timeout.error.js';
import { payloadRefusal } from '../transport/refusal.js';

/** The errors the filter answers, with their HTTP status and Nest's name for it. */
const ANSWERS: readonly [Function, HttpStatus, string][] = [
  [TaskResultNotFoundError, HttpStatus.NOT_FOUND, 'Not Found'],
  [InvalidEnqueueError, HttpStatus.BAD_REQUEST, 'Bad Request'],
  [UnknownTaskError, HttpStatus.BAD_REQUEST, 'Bad Request'],
  [InvalidWaitError, HttpStatus.BAD_REQUEST, 'Bad Request'],
  [RedisUnavailableError, HttpStatus.SERVICE_UNAVAILABLE, 'Service Unavailable'],
  [WaitTimeoutError, HttpStatus.GATEWAY_TIMEOUT, 'Gateway Timeout'],
  [RunFailedError, HttpStatus.BAD_GATEWAY, 'Bad Gateway'],
];

/** The JSON body of an answer: Nest's usual error shape. */
export interface ThreadmillErrorBody {
  readonly statusCode: number;
  readonly message: string;
  readonly error: string;
  /**
   * Of a 422: the reasons the handler refused the payload with, one each,
   * when it listed them (`ValidationPipe`'s failed constraints, as Nest's own
   * 400 lists them in `message`). Absent otherwise.
   */
  readonly reasons?: readonly string[];
}

/**
 * Answers Threadmill's errors in an HTTP request the way Nest answers its
 * own `HttpException`s, instead of a bare 500:
 *
 * | error | status |
 * | --- | --- |
 * | `TaskResultNotFoundError` | 404 |
 * | `InvalidEnqueueError`, `UnknownTaskError`, `InvalidWaitError` | 400 |
 * | `RedisUnavailableError` | 503, with `Retry-After` ({@link retryAfterSeconds}) |
 * | `WaitTimeoutError` | 504 |
 * | `RunFailedError` of a payload the handler refused as invalid | 422, with its `reasons` |
 * | `RunFailedError`, otherwise | 502 |
 *
 * The body is `{ statusCode, message, error }`. A 503 says only that the
 * task queue is unavailable (the error's message names the Redis host, which
 * is the server's business) and logs the error itself. A `RunFailedError` is
 * what `ThreadmillClient.send` raises when the run it waited for ended
 * without a result: the request depended on a run that failed, a 502, whose
 * body names the run and its status, not the handler's error (the worker's
 * business, which may name its internals), which is logged. Only when the
 * handler refused the payload as invalid (the `BadRequestException` of a
 * `ValidationPipe`, or an `UnprocessableEntityException`) is the request at
 * fault: a 422 that gives the handler's reasons, as Nest's own 400 would.
 *
 * Register it for the whole app with `{ provide: APP_FILTER, useClass:
 * ThreadmillExceptionFilter }` or `app.useGlobalFilters(new
 * ThreadmillExceptionFilter(app.get(HttpAdapterHost)))`, or on a controller
 * with `@UseFilters(ThreadmillExceptionFilter)`. Outside HTTP (a
 * microservice handler, a hybrid app's `ThreadmillServer`) it hands the
 * error back unchanged, as an erroring Observable, so the run fails with it
 * as it would without the filter.
 */
@Catch(
  TaskResultNotFoundError,
  InvalidEnqueueError,
  UnknownTaskError,
  InvalidWaitError,
  RedisUnavailableError,
  WaitTimeoutError,
  RunFailedError,
)
export class ThreadmillExceptionFilter implements ExceptionFilter {
  /** The `Retry-After` of a 503, in seconds. Subclass to change it. @defaultValue 5 */
  protected readonly retryAfterSeconds: number = 5;
  private readonly logger = new Logger('Threadmill');

  /**
   * @param adapterHost the HTTP adapter (Express, Fastify) that writes the
   *   answer; given by DI, else the response is written Express-style or
   *   Fastify-style by duck typing
   */
  constructor(@Optional() @Inject(HttpAdapterHost) private readonly adapterHost?: HttpAdapterHost) {}

  catch(exception: Error, host: ArgumentsHost): void | Observable<never> {
    if (host.getType() !== 'http') return throwError(() => exception);
    const headers: Record<string, string> = {};
    const body = this.answer(exception, headers);
    this.reply(host.switchToHttp().getResponse(), body, headers);
  }

  /** The body of the answer to `exception`, and its headers into `headers`. */
  private answer(exception: Error, headers: Record<string, string>): ThreadmillErrorBody {
    const [, statusCode, error] = ANSWERS.find(([type]) => exception instanceof type) ?? [
      undefined,
      HttpStatus.INTERNAL_SERVER_ERROR,
      'Internal Server Error',
    ];
    if (exception instanceof RedisUnavailableError) {
      this.logger.error(exception.message);
      headers['Retry-After'] = String(this.retryAfterSeconds);
      return { statusCode, message: 'The task queue is unavailable. Retry later.', error };
    }
    if (exception instanceof RunFailedError) {
      const { id, taskName, status } = exception.result;
      const refusal = payloadRefusal(exception.result);
      if (refusal) {
        const { reasons } = refusal;
        return {
          statusCode: HttpStatus.UNPROCESSABLE_ENTITY,
          message: `${taskName} refused the payload: ${reasons ? reasons.join('; ') : refusal.message}`,
          error: 'Unprocessable Entity',
          ...(reasons ? { reasons } : {}),
        };
      }
      this.logger.error(exception.message);
      return { statusCode, message: `Run ${id} of ${taskName} ended ${status}.`, error };
    }
    return { statusCode, message: exception.message, error };
  }

  private reply(response: any, body: ThreadmillErrorBody, headers: Record<string, string>): void {
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) {
      for (const [name, value] of Object.entries(headers)) adapter.setHeader(response, name, value);
      adapter.reply(response, body, body.statusCode);
    } else if (typeof response.code === 'function' && typeof response.header === 'function') {
      // Fastify's reply.
      for (const [name, value] of Object.entries(headers)) response.header(name, value);
      response.code(body.statusCode).send(body);
    } else {
      // Express's response.
      for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
      response.status(body.statusCode).json(body);
    }
  }
}
