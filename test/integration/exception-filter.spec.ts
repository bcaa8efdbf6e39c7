import { Body, Controller, Get, type INestApplication, Param, Post, Query } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import type { ArgumentsHost } from '@nestjs/common';
import {
  TaskQueue,
  ThreadmillExceptionFilter,
  ThreadmillModule,
  UnknownTaskError,
  type ThreadmillErrorBody,
} from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import type { AddressInfo } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES, FixtureTasksModule, MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';

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
