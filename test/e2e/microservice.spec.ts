import type { INestApplicationContext } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  InvalidEnqueueError,
  RedisUnavailableError,
  RunFailedError,
  TaskStatus,
  type TaskResult,
} from '@threadmill/nestjs';
import { ThreadmillClient, ThreadmillRecord } from '@threadmill/nestjs/microservices';
import { firstValueFrom, lastValueFrom, timeout, TimeoutError } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendWelcome } from '../fixtures/fixture-contracts.js';
import { FIXTURE_QUEUES } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Witness } from '../support/witness.js';
import { waitUntil } from '../support/wait.js';
import { WorkerProcess } from '../support/worker-process.js';

/**
 * A worker started as a plain Nest microservice (createMicroservice with a
 * ThreadmillServer) in its own process, and a producer application here that
 * holds nothing but a ThreadmillClient registered through ClientsModule.
 */
describe('a ThreadmillServer microservice and a ThreadmillClient producer (real processes)', () => {
  const alias = uniqueAlias('ms');
  let worker: WorkerProcess;
  let producer: INestApplicationContext;
  let client: ThreadmillClient;
  const witness = new Witness(alias);

  beforeAll(async () => {
    worker = WorkerProcess.start(alias, [], {}, false, 'microservice-main');
    await worker.waitForOutput(/microservice listening/);
    const module = await Test.createTestingModule({
      imports: [
        ClientsModule.register([
          {
            name: 'TASKS',
            customClass: ThreadmillClient,
            options: { connection: redisUrl(), alias, queues: FIXTURE_QUEUES },
          },
        ]),
      ],
    }).compile();
    producer = await module.init();
    client = producer.get<ThreadmillClient>('TASKS');
  });

  afterAll(async () => {
    await producer?.close();
    await worker?.stop();
    witness.close();
  });

  it("send() returns the handler's value", async () => {
    expect(await firstValueFrom(client.send<number>('handlers.sum', [1, 2, 3, 4]))).toBe(10);
  });

  it('send() with a contract is typed and returns the task method’s value', async () => {
    const greeting: string = await firstValueFrom(client.send(SendWelcome, [7, 'ada@example.com']));
    expect(greeting).toBe('welcome 7 ada@example.com (attempt 1)');
  });

  it('emit() completes once the run is stored, and the handler runs it once', async () => {
    const stored = await lastValueFrom(client.emit<TaskResult>('handlers.work', 50));
    expect(stored).toMatchObject({ taskName: 'handlers.work', status: TaskStatus.READY });
    const queue = client.unwrap();
    expect(await queue.waitFor(stored.id, { timeoutMs: 10_000 })).toMatchObject({ status: TaskStatus.SUCCESSFUL });
    expect((await witness.completions()).get(stored.id)).toBe(1);
    expect((await witness.starts()).get(stored.id)).toBe(1);
  });

  it('emit() and send() take a dedupe key through a ThreadmillRecord; send() waits for the run the key holds', async () => {
    const dedupe = { key: `sum-${alias}`, ttlMs: 60_000 };
    const first = await firstValueFrom(client.emit<TaskResult>('handlers.work', new ThreadmillRecord(30, { dedupe })));
    const second = await firstValueFrom(client.emit<TaskResult>('handlers.work', new ThreadmillRecord(40, { dedupe })));
    expect(first.deduplicated).toBeUndefined();
    expect(second).toMatchObject({ id: first.id, deduplicated: true, args: [30] });
    const sums = { key: `sums-${alias}`, ttlMs: 60_000 };
    expect(
      await firstValueFrom(client.send<number>('handlers.sum', new ThreadmillRecord([1, 2], { dedupe: sums }))),
    ).toBe(3);
    // Within ttlMs the key holds the finished run: its value comes back, not 10.
    expect(
      await firstValueFrom(client.send<number>('handlers.sum', new ThreadmillRecord([5, 5], { dedupe: sums }))),
    ).toBe(3);
    await client.unwrap().waitFor(first.id, { timeoutMs: 10_000 });
    expect((await witness.completions()).get(first.id)).toBe(1);
  });

  it('emit() is cold: nothing is stored until it is subscribed to', async () => {
    const queue = client.unwrap();
    const before = await queue.counts(['reports']);
    const pending = client.emit('MathService.add', new ThreadmillRecord([1, 2], { queue: 'reports', delayMs: 60_000 }));
    expect(await queue.counts(['reports'])).toEqual(before);
    const stored = await firstValueFrom(pending);
    expect(stored).toMatchObject({ queue: 'reports' });
    expect((await queue.counts(['reports']))[0]!.deferred).toBe(before[0]!.deferred + 1);
  });

  it("a payload ValidationPipe rejects fails the send with the pipe's reasons, and the run is not retried", async () => {
    const error = await firstValueFrom(client.send('handlers.welcome', { userId: 0, email: 'nope' })).catch((e) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    const failed = (error as RunFailedError).result;
    expect(failed).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect((error as RunFailedError).error).toMatchObject({ errorClass: 'BadRequestException' });
    expect((error as Error).message).toMatch(/email must be an email/);
  });

  it('a guard that refuses fails the send, and the run is not retried', async () => {
    const error = await firstValueFrom(client.send('handlers.guarded', {})).catch((e) => e);
    expect(error).toBeInstanceOf(RunFailedError);
    expect((error as RunFailedError).result).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect((error as RunFailedError).error).toMatchObject({ errorClass: 'ForbiddenException' });
  });

  it('an interceptor wraps the result, and an exception filter passes the error on as thrown', async () => {
    expect(await firstValueFrom(client.send('handlers.intercepted', 41))).toEqual({ wrapped: 41 });
    const error = await firstValueFrom(client.send('handlers.filtered', 'boom')).catch((e) => e);
    expect((error as RunFailedError).error).toMatchObject({ errorClass: 'FixtureError', message: 'boom' });
  });

  it('@Ctx() carries the run id and attempt', async () => {
    const stored = await firstValueFrom(client.emit<TaskResult>('handlers.context', {}));
    const done = await client.unwrap().waitFor(stored.id, { timeoutMs: 10_000 });
    expect(done.returnValue).toMatchObject({ id: stored.id, attempt: 1, pattern: 'handlers.context' });
  });

  it('rxjs timeout() stops waiting without cancelling the run', async () => {
    const queue = client.unwrap();
    const successful = async () => (await queue.counts(['default']))[0]!.successful;
    const before = await successful();
    const error = await firstValueFrom(client.send('SlowService.sleep', 400).pipe(timeout(100))).catch((e) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    await waitUntil('the run the sender stopped waiting for still finishes', async () => (await successful()) > before);
  });

  it('bad input errors the Observable with the typed error of enqueue, and stores nothing', async () => {
    const before = await client.unwrap().counts();
    await expect(firstValueFrom(client.emit(SendWelcome, 'not a tuple' as never))).rejects.toBeInstanceOf(
      InvalidEnqueueError,
    );
    await expect(firstValueFrom(client.emit('handlers.note', () => 'a function'))).rejects.toBeInstanceOf(
      InvalidEnqueueError,
    );
    expect(await client.unwrap().counts()).toEqual(before);
  });

  it('an unreachable Redis errors the Observable with RedisUnavailableError', async () => {
    const offline = new ThreadmillClient({ connection: 'redis://127.0.0.1:1', connectTimeoutMs: 300 });
    await expect(firstValueFrom(offline.emit('handlers.note', 'x'))).rejects.toBeInstanceOf(RedisUnavailableError);
    await offline.close();
  });
});
