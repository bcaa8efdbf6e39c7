import { Body, Controller, Get, Inject, type INestApplication, Param, Post, Query } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import type { ArgumentsHost } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import {
  TaskQueue,
  ThreadmillExceptionFilter,
  ThreadmillModule,
  UnknownTaskError,
  type ThreadmillErrorBody,
} from '@threadmill/nestjs';
import { ThreadmillClient } from '@threadmill/nestjs/microservices';
import { RedisServer } from '@threadmill/nestjs/testing';
import type { AddressInfo } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FixtureHandlersModule } from '../fixtures/fixture-handlers.js';
import { FIXTURE_QUEUES, FixtureTasksModule, MathService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';

@Controller()
class RunsController {
  constructor(private readonly tasks: TaskQueue) {}

  @Post('runs')
  enqueue(@Body() body: { task: string; args: unknown[] }) {
    return this.tasks.enqueue(body.task, body.args);
  }

  /** A method of MathService by name: one that is no task throws UnknownTaskError. */
  @Post('math/:method')
  math(@Param('method') method: string, @Body() body: { args: unknown[] }) {
    return this.tasks.enqueue(MathService, method as 'add', body.args as [number, number]);
  }

  @Get('runs/:id')
  result(@Param('id') id: string) {
    return this.tasks.getResult(id);
  }

  @Get('runs/:id/wait')
  wait(@Param('id') id: string, @Query('timeoutMs') timeoutMs: string) {
    return this.tasks.waitFor(id, { timeoutMs: Number(timeoutMs) });
  }

  @Get('broken')
  broken(): never {
    throw new Error('a bug of the app');
  }
}

/** Sends what it is posted to the handler of `pattern` through a ThreadmillClient and answers what it returns. */
@Controller()
class SendController {
  constructor(@Inject('TASKS') private readonly client: ThreadmillClient) {}

  @Post('send/:pattern')
  send(@Param('pattern') pattern: string, @Body() body: { payload: unknown }) {
    return firstValueFrom(this.client.send(pattern, body.payload));
  }
}

/** Asserts a Threadmill error answer: its status, JSON type and body shape. */
async function answer(response: Response, status: number, error: string): Promise<ThreadmillErrorBody> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/application\/json/);
  const body = (await response.json()) as ThreadmillErrorBody;
  expect(body).toMatchObject({ statusCode: status, error });
  return body;
}

describe('ThreadmillExceptionFilter over HTTP', () => {
  let redis: RedisServer;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    redis = await RedisServer.start();
    app = await NestFactory.create(
      {
        module: class FilteredApp {},
        imports: [
          // A short wait for Redis: an HTTP request should not hang for the default 10 s during an outage.
          ThreadmillModule.forRoot({
            connection: redis.url,
            alias: uniqueAlias(),
            queues: FIXTURE_QUEUES,
            connectTimeoutMs: 1_000,
          }),
          FixtureTasksModule,
        ],
        controllers: [RunsController],
        providers: [{ provide: APP_FILTER, useClass: ThreadmillExceptionFilter }],
      },
      { logger: false },
    );
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('answers an unknown run id with 404', async () => {
    const body = await answer(await fetch(`${base}/runs/no-such-run`), 404, 'Not Found');
    expect(body.message).toMatch(/No task run with id "no-such-run"/);
  });

  it('answers an unknown task and invalid arguments with 400, naming the problem', async () => {
    const unknown = await answer(await post('/math/subtract', { args: [1, 2] }), 400, 'Bad Request');
    expect(unknown.message).toMatch(/MathService.*subtract/);
    const invalid = await answer(
      await post('/runs', { task: 'MathService.add', args: ['two', 3] }),
      400,
      'Bad Request',
    );
    expect(invalid.message).toMatch(/args\[0\] \(a\) must be a number, got "two"/);
  });

  it('answers a bad wait with 400 and a wait that times out with 504', async () => {
    await answer(await fetch(`${base}/runs/some-id/wait?timeoutMs=-1`), 400, 'Bad Request');
    // Nothing consumes the run here, so the wait gives up.
    const created = (await (await post('/runs', { task: 'MathService.add', args: [1, 2] })).json()) as { id: string };
    const body = await answer(await fetch(`${base}/runs/${created.id}/wait?timeoutMs=50`), 504, 'Gateway Timeout');
    expect(body.message).toMatch(/did not settle within 50 ms/);
  });

  it('leaves other errors to Nest (500)', async () => {
    const response = await fetch(`${base}/broken`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ statusCode: 500, message: 'Internal server error' });
  });

  it('hands the error back unchanged outside HTTP (a microservice handler fails with it)', async () => {
    const error = new UnknownTaskError('Some.task', []);
    const host = { getType: () => 'rpc' } as unknown as ArgumentsHost;
    const returned = new ThreadmillExceptionFilter().catch(error, host);
    await expect(firstValueFrom(returned!)).rejects.toBe(error);
  });

  it('answers 503 with Retry-After while Redis is down, without the Redis address', async () => {
    await redis.stop();
    const response = await post('/runs', { task: 'MathService.add', args: [1, 2] });
    expect(response.headers.get('retry-after')).toBe('5');
    const body = await answer(response, 503, 'Service Unavailable');
    expect(body.message).toBe('The task queue is unavailable. Retry later.');
    expect(body.message).not.toMatch(String(redis.url.split(':').at(-1)));
  });
});

describe('ThreadmillExceptionFilter over HTTP, for a run the request sent to a worker', () => {
  let worker: Harness;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    // The worker: FixtureHandlers served by a ThreadmillServer, as a microservice of its own.
    worker = await Harness.start({ worker: { concurrency: 4 }, imports: [FixtureHandlersModule] });
    app = await NestFactory.create(
      {
        module: class SendingApp {},
        imports: [
          ClientsModule.register([
            {
              name: 'TASKS',
              customClass: ThreadmillClient,
              options: { connection: redisUrl(), alias: worker.alias, queues: FIXTURE_QUEUES },
            },
          ]),
        ],
        controllers: [SendController],
        providers: [{ provide: APP_FILTER, useClass: ThreadmillExceptionFilter }],
      },
      { logger: false },
    );
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await app?.close();
    await worker?.close();
  });

  const send = (pattern: string, payload: unknown) =>
    fetch(`${base}/send/${pattern}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payload }),
    });

  it("answers the handler's result when its run succeeds", async () => {
    const response = await send('handlers.welcome', { userId: 7, email: 'ada@example.com' });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('welcome ada@example.com');
  });

  it("answers 422 with ValidationPipe's reasons when the handler refused the payload", async () => {
    const body = await answer(
      await send('handlers.welcome', { userId: 0, email: 'not-an-email' }),
      422,
      'Unprocessable Entity',
    );
    expect(body).toEqual({
      statusCode: 422,
      message: 'handlers.welcome refused the payload: userId must not be less than 1; email must be an email',
      error: 'Unprocessable Entity',
      reasons: ['userId must not be less than 1', 'email must be an email'],
    });
  });

  it("answers 502 naming the run, not the handler's error, when the handler failed", async () => {
    const body = await answer(
      await send('handlers.filtered', 'the worker lost its database password'),
      502,
      'Bad Gateway',
    );
    expect(body.message).toMatch(/^Run \S+ of handlers\.filtered ended FAILED\.$/);
    expect(body.message).not.toMatch(/password/);
    expect(body.reasons).toBeUndefined();
    const id = body.message.split(' ')[1]!;
    expect((await worker.queue.getResult(id)).errors[0]).toMatchObject({ errorClass: 'FixtureError' });
  });

  it('answers 502 when a guard of the handler refused the call: the request is not at fault', async () => {
    const body = await answer(await send('handlers.guarded', { who: 'mallory' }), 502, 'Bad Gateway');
    expect(body.message).toMatch(/^Run \S+ of handlers\.guarded ended FAILED\.$/);
  });
});
