import { Controller, Module, Scope } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { DuplicateTaskError, InvalidTaskError, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { THREADMILL_TRANSPORT, ThreadmillServer, type ThreadmillServerOptions } from '@threadmill/nestjs/microservices';
import { afterEach, describe, expect, it } from 'vitest';
import { FixtureHandlersModule, HandlerCalls } from '../fixtures/fixture-handlers.js';
import { FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { bootError } from '../support/boot.js';
import { Harness } from '../support/harness.js';

const start = () => Harness.start({ worker: { concurrency: 4 }, imports: [FixtureHandlersModule] });
const finished = (result: TaskResult) => result.status !== TaskStatus.READY && result.status !== TaskStatus.RUNNING;

describe('Nest handlers served by ThreadmillServer', () => {
  let app: Harness;

  afterEach(async () => {
    await app?.close();
  });

  const run = async (pattern: string, payload: unknown) => {
    const enqueued = await app.queue.enqueue(pattern, [payload]);
    return app.waitFor(enqueued.id, finished);
  };

  it('runs an @EventPattern handler once, in the queue its extras name, with its payload and context', async () => {
    app = await start();
    const result = await run('handlers.note', 'hello');
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, queue: 'emails', attempts: 1 });
    expect(app.module.get(HandlerCalls).of('note')).toEqual([
      { what: 'note', value: 'hello', pattern: 'handlers.note' },
    ]);
  });

  it("stores a @MessagePattern handler's return value, and an Observable's last value", async () => {
    app = await start();
    expect(await run('handlers.sum', [1, 2, 3])).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 6 });
    expect(await run('handlers.observable', { from: 10 })).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 8,
    });
  });

  it('gives @Ctx() a ThreadmillContext carrying the run id, attempt, queue and pattern', async () => {
    app = await start();
    const result = await run('handlers.context', null);
    expect(result.returnValue).toEqual({
      id: result.id,
      attempt: 1,
      queue: 'default',
      pattern: 'handlers.context',
      aborted: false,
      isThreadmillContext: true,
    });
  });

  it('passes an undecorated handler its payload alone, as Nest transports do', async () => {
    app = await start();
    expect((await run('handlers.bare', { a: 1 })).returnValue).toEqual({ data: { a: 1 }, context: 'none' });
  });

  it('ends a run whose payload ValidationPipe rejects FAILED at once, with the reasons, without retrying', async () => {
    app = await start();
    const result = await run('handlers.welcome', { userId: 0, email: 'not-an-email' });
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]!.errorClass).toBe('BadRequestException');
    expect(result.errors[0]!.message).toMatch(/userId must not be less than 1/);
    expect(result.errors[0]!.message).toMatch(/email must be an email/);
    // One by one too, for whoever answers the sender (the HTTP filter's 422).
    expect(result.errors[0]!.reasons).toEqual(['userId must not be less than 1', 'email must be an email']);
    expect(app.module.get(HandlerCalls).of('welcome')).toEqual([]);

    const valid = await run('handlers.welcome', { userId: 7, email: 'ada@example.com' });
    expect(valid).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'welcome ada@example.com' });
  });

  it('ends a run its guard refuses FAILED at once, the handler never called, the guard in an rpc context', async () => {
    app = await start();
    const result = await run('handlers.guarded', { who: 'mallory' });
    expect(result).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect(result.errors[0]).toMatchObject({ errorClass: 'ForbiddenException', message: 'Forbidden resource' });
    expect(result.errors[0]!.reasons).toBeUndefined();
    const calls = app.module.get(HandlerCalls);
    expect(calls.of('guarded')).toEqual([]);
    expect(calls.of('guard')).toEqual([{ what: 'guard', type: 'rpc', value: { who: 'mallory' } }]);
  });

  it("runs an interceptor around the handler, whose result becomes the run's", async () => {
    app = await start();
    expect((await run('handlers.intercepted', 41)).returnValue).toEqual({ wrapped: 41 });
    expect(app.module.get(HandlerCalls).of('interceptor')).toEqual([
      { what: 'interceptor', type: 'rpc', pattern: 'handlers.intercepted' },
    ]);
  });

  it("shows an exception filter the handler's error, and records the error the filter passes on", async () => {
    app = await start();
    const result = await run('handlers.filtered', 'boom');
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.errors[0]).toMatchObject({ errorClass: 'FixtureError', message: 'boom' });
    expect(app.module.get(HandlerCalls).of('filter')).toEqual([
      { what: 'filter', type: 'rpc', value: 'FixtureError: boom' },
    ]);
  });

  it('retries a failing handler by the policy of its extras, with the error it threw, until it succeeds', async () => {
    app = await start();
    const result = await run('handlers.flaky', 2);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 3, returnValue: 'succeeded on attempt 3' });
    expect(result.errors.map((e) => [e.errorClass, e.message])).toEqual([
      ['FixtureError', 'attempt 1 fails'],
      ['FixtureError', 'attempt 2 fails'],
    ]);
  });

  it('does not retry a NonRetryableError', async () => {
    app = await start();
    expect(await run('handlers.declined', null)).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
  });

  it('serves @Task() methods beside the handlers', async () => {
    app = await start();
    const enqueued = await app.queue.enqueue('MathService.add', [2, 3]);
    expect(await app.waitFor(enqueued.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 5 });
  });
});

describe('a ThreadmillServer that cannot serve its application', () => {
  it('fails to listen without ThreadmillModule, saying what to import', async () => {
    @Controller()
    class Lonely {
      @MessagePattern('lonely')
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Lonely] })
    class LonelyModule {}
    const error = await bootError([LonelyModule], { server: true, threadmill: false });
    expect((error as Error).message).toMatch(/ThreadmillServer found no ThreadmillModule in its application/);
    expect((error as Error).message).toMatch(/Import ThreadmillModule\.forRoot/);
  });

  it('fails to start on a handler whose extras name an undeclared queue', async () => {
    @Controller()
    class Misrouted {
      @MessagePattern('misrouted', { queue: 'nope' })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Misrouted] })
    class MisroutedModule {}
    const error = await bootError([MisroutedModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /Invalid @MessagePattern\(\) on Misrouted#handle \(pattern misrouted\): queue "nope" is not one of the module's queues/,
    );
  });

  it("fails to start on an extras key a handler's task does not take, naming the closest one", async () => {
    @Controller()
    class Misspelt {
      @EventPattern('misspelt', { queu: 'emails', retries: 3 })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Misspelt] })
    class MisspeltModule {}
    const error = await bootError([MisspeltModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toBe(
      'Invalid @EventPattern() on Misspelt#handle: unknown option "queu" (did you mean "queue"?); ' +
        'unknown option "retries" (did you mean "retry"?). Valid options of @EventPattern() extras: backend, queue, ' +
        'priority, retry, leaseTtlMs, resultTtlMs, timeoutMs.',
    );
  });

  it('refuses a @Task() option that handlers do not take, saying why', async () => {
    @Controller()
    class Limited {
      @MessagePattern('limited', { limit: { concurrency: 1 } })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Limited] })
    class LimitedModule {}
    const error = await bootError([LimitedModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /^Invalid @MessagePattern\(\) on Limited#handle: option "limit" does not apply here: a task limit is declared on a @Task\(\) method/,
    );
  });

  it("lets through other transports' extras on a handler they serve too, not on one bound to Threadmill", async () => {
    @Controller()
    class Shared {
      // qos: MQTT's; kafkaGroupId: a third-party transport's, like no key of Threadmill's.
      @EventPattern('shared', { qos: 1, kafkaGroupId: 'billing', queue: 'emails' })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Shared] })
    class SharedModule {}
    expect(await bootError([SharedModule], { server: true })).toBeUndefined();

    @Controller()
    class Bound {
      @EventPattern('bound', THREADMILL_TRANSPORT, { qos: 1 })
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [Bound] })
    class BoundModule {}
    const error = await bootError([BoundModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /Bound#handle: unknown option "qos"\. Valid options of @EventPattern\(\) extras/,
    );
  });

  it('fails to start on a handler named like a @Task()', async () => {
    @Controller()
    class Clash {
      @MessagePattern('MathService.add')
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ imports: [FixtureTasksModule], controllers: [Clash] })
    class ClashModule {}
    const error = await bootError([ClashModule], { server: true });
    expect(error).toBeInstanceOf(DuplicateTaskError);
    expect((error as Error).message).toMatch(
      /"MathService.add" is declared twice: by MathService#add and by Clash#handle/,
    );
  });

  it('fails to start on a handler of a request-scoped controller, saying why and what to do', async () => {
    @Controller({ scope: Scope.REQUEST })
    class PerRequest {
      @MessagePattern('per-request')
      handle(@Payload() value: number): number {
        return value;
      }
    }
    @Module({ controllers: [PerRequest] })
    class PerRequestModule {}
    const error = await bootError([PerRequestModule], { server: true });
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toMatch(
      /PerRequest#handle: its controller is request-scoped .*A run has no request/,
    );
  });

  it('refuses backend options given to the server, naming where they belong', () => {
    expect(() => new ThreadmillServer({ connection: 'redis://localhost' } as ThreadmillServerOptions)).toThrow(
      /connection: a backend option; set it in ThreadmillModule\.forRoot\(\)/,
    );
    expect(() => new ThreadmillServer({ concurrency: 0 })).toThrow(
      /concurrency: got 0; concurrency must not be less than 1/,
    );
  });
});
