import { Controller, Injectable, Module, type INestApplication } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  defineTask,
  getTaskInspectorToken,
  getTaskQueueToken,
  InjectTaskInspector,
  InjectTaskQueue,
  InvalidTaskError,
  Task,
  TaskInspector,
  TaskResultNotFoundError,
  TaskQueue,
  TaskStatus,
  ThreadmillConfigError,
  ThreadmillModule,
  WrongBackendError,
} from '@threadmill/nestjs';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';

@Injectable()
class Reports {
  @Task({ name: 'reports.build' })
  build(id: string) {
    return `report ${id}`;
  }
}

@Injectable()
class Payments {
  @Task({ name: 'payments.charge', backend: 'critical', queue: 'payments' })
  charge(cents: number) {
    return cents * 2;
  }
}

@Controller()
class AuditHandlers {
  @EventPattern('audit.record', { backend: 'critical', queue: 'payments' })
  record(@Payload() entry: string) {
    return `audited ${entry}`;
  }
}

/** A user's service with both backends' queues and inspectors injected. */
@Injectable()
class Checkout {
  constructor(
    readonly tasks: TaskQueue,
    @InjectTaskQueue('critical') readonly critical: TaskQueue,
    @InjectTaskInspector('critical') readonly criticalInspector: TaskInspector,
  ) {}
}

@Module({ providers: [Reports, Payments, Checkout], controllers: [AuditHandlers] })
class AppTasks {}

@Injectable()
class Orphan {
  @Task({ name: 'orphan.run', backend: 'archive' })
  run() {}
}

@Module({ providers: [Orphan] })
class OrphanTasks {}

const ChargeContract = defineTask<[cents: number], number>('payments.charge', {
  backend: 'critical',
  queue: 'payments',
});

/** Every key of `redis` that mentions run `id`. */
async function keysOf(redis: Redis, id: string): Promise<string[]> {
  const keys = await redis.keys('threadmill:*');
  const found: string[] = [];
  for (const key of keys) {
    const type = await redis.type(key);
    if (key.includes(id)) found.push(key);
    else if (type === 'hash' && (await redis.hexists(key, id))) found.push(key);
    else if (type === 'zset' && (await redis.zscore(key, id)) !== null) found.push(key);
    else if (type === 'list' && (await redis.lpos(key, id)) !== null) found.push(key);
  }
  return found;
}

describe('several backends in one application', () => {
  let second: RedisServer;
  let first: Redis;
  let other: Redis;
  let alias: string;
  let module: TestingModule | undefined;
  let app: INestApplication | undefined;

  beforeAll(async () => {
    second = await RedisServer.start();
    first = new Redis(redisUrl());
    other = new Redis(second.url);
  });

  afterAll(async () => {
    first.disconnect();
    other.disconnect();
    await second.stop();
  });

  afterEach(async () => {
    await app?.close();
    await module?.close();
    app = module = undefined;
    await other.flushall();
  });

  /** Boots the app with both backends: the default on the test Redis, `critical` on the second server. */
  async function boot(servers: ThreadmillServer[]): Promise<TestingModule> {
    alias = uniqueAlias('named');
    module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias, queues: ['default'] }),
        // No alias: a named backend's keys live under its name.
        ThreadmillModule.forRootAsync({
          name: 'critical',
          useFactory: () => ({ connection: second.url, queues: ['payments'] }),
        }),
        AppTasks,
      ],
    }).compile();
    module.useLogger(false);
    app = module.createNestApplication({ logger: false });
    for (const strategy of servers) app.connectMicroservice({ strategy }, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.init();
    return module;
  }

  it("runs each backend's tasks on its own Redis, through its own queue and server", async () => {
    const booted = await boot([new ThreadmillServer(), new ThreadmillServer({ backend: 'critical' })]);
    const checkout = booted.get(Checkout);
    expect(checkout.critical).toBe(booted.get(getTaskQueueToken('critical')));
    expect(checkout.critical).not.toBe(checkout.tasks);
    expect(booted.get(getTaskQueueToken())).toBe(checkout.tasks);
    expect(booted.get(getTaskInspectorToken('critical'))).toBe(checkout.criticalInspector);

    const report = await checkout.tasks.enqueue(Reports, 'build', ['q3']);
    const charge = await checkout.critical.enqueue(Payments, 'charge', [150]);
    const audit = await checkout.critical.enqueue('audit.record', ['refund 7']);

    expect(await checkout.tasks.waitFor(report.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 'report q3',
    });
    expect(await checkout.critical.waitFor(charge.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 300,
    });
    expect(await checkout.critical.waitFor(audit.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      queue: 'payments',
      returnValue: 'audited refund 7',
    });

    // Seen from Redis itself: each run on its own server, under its backend's alias.
    expect(await first.hexists(`threadmill:{${alias}}:done`, report.id)).toBe(1);
    expect(await other.hexists(`threadmill:{critical}:done`, charge.id)).toBe(1);
    expect(await other.hexists(`threadmill:{critical}:done`, audit.id)).toBe(1);
    expect(await keysOf(other, report.id)).toEqual([]);
    expect(await keysOf(first, charge.id)).toEqual([]);
    expect(await keysOf(first, audit.id)).toEqual([]);
    // And through the inspector of each backend.
    expect(await checkout.criticalInspector.queues()).toEqual(['payments']);
    await expect(checkout.tasks.getResult(charge.id)).rejects.toBeInstanceOf(TaskResultNotFoundError);
  });

  it("refuses an enqueue through the wrong backend's queue, naming both backends, and stores nothing", async () => {
    const booted = await boot([]);
    const { tasks, critical } = booted.get(Checkout);
    const before = [await first.keys(`threadmill:{${alias}}:*`), await other.keys('threadmill:*')];

    const attempts: [string, Promise<unknown>][] = [
      ['by method', tasks.enqueue(Payments, 'charge', [150])],
      ['by name', tasks.enqueue('payments.charge', [150])],
      ['by contract', tasks.enqueue(ChargeContract, [150])],
      [
        'in enqueueMany',
        tasks.enqueueMany([
          { task: Reports, method: 'build', args: ['q3'] },
          { task: 'payments.charge', args: [1] },
        ]),
      ],
    ];
    for (const [how, attempt] of attempts) {
      const error = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, how).toBeInstanceOf(WrongBackendError);
      expect(error, how).toMatchObject({ taskBackend: 'critical', queueBackend: 'default' });
      expect((error as Error).message, how).toContain(`@InjectTaskQueue('critical')`);
      expect((error as Error).message, how).toContain('"default"');
      expect((error as Error).message, how).toContain('Nothing was enqueued');
    }
    const reverse = await critical.enqueue(Reports, 'build', ['q3']).catch((e: unknown) => e);
    expect(reverse).toBeInstanceOf(WrongBackendError);
    expect((reverse as Error).message).toMatch(
      /belongs to backend "default", but this TaskQueue is backend "critical"'s.*inject `TaskQueue`/,
    );

    expect([await first.keys(`threadmill:{${alias}}:*`), await other.keys('threadmill:*')]).toEqual(before);
    expect(await first.hlen(`threadmill:{${alias}}:fresh`)).toBe(0);
    expect(await other.hlen('threadmill:{critical}:fresh')).toBe(0);
  });

  it('a worker consuming the critical backend runs only its tasks', async () => {
    const booted = await boot([new ThreadmillServer({ backend: 'critical' })]);
    const { tasks, critical } = booted.get(Checkout);
    const report = await tasks.enqueue(Reports, 'build', ['q4']);
    const charge = await critical.enqueue(Payments, 'charge', [21]);
    expect(await critical.waitFor(charge.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 42 });
    // The default backend has no server: its run stays ready.
    expect(await tasks.getResult(report.id)).toMatchObject({ status: TaskStatus.READY, attempts: 0 });
    expect(await tasks.counts()).toEqual([expect.objectContaining({ queue: 'default', ready: 1, running: 0 })]);
  });

  it('fails the boot of a task bound to a backend no module declares, naming it and the declared ones', async () => {
    const testing = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias(), queues: ['default'] }),
        ThreadmillModule.forRoot({ name: 'critical', connection: second.url, queues: ['payments'] }),
        OrphanTasks,
      ],
    }).compile();
    testing.useLogger(false);
    const error = await testing.init().catch((e: unknown) => e);
    await testing.close().catch(() => undefined);
    expect(error).toBeInstanceOf(InvalidTaskError);
    expect((error as Error).message).toContain('Orphan#run');
    expect((error as Error).message).toContain('backend "archive" is not declared');
    expect((error as Error).message).toContain('"critical", "default"');
    expect((error as Error).message).toContain("ThreadmillModule.forRoot({ name: 'archive'");
  });

  it('fails the boot of two modules of one name', async () => {
    const testing = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ name: 'critical', connection: second.url, queues: ['payments'] }),
        ThreadmillModule.forRoot({ name: 'critical', connection: redisUrl(), alias: uniqueAlias() }),
      ],
    }).compile();
    testing.useLogger(false);
    const error = await testing.init().catch((e: unknown) => e);
    await testing.close().catch(() => undefined);
    expect(error).toBeInstanceOf(ThreadmillConfigError);
    expect((error as Error).message).toContain('2 ThreadmillModules declare backend "critical"');
  });

  it('validates the name where the module is declared, and a factory cannot rename its backend', async () => {
    expect(() => ThreadmillModule.forRoot({ name: 'critical queue' })).toThrow(ThreadmillConfigError);
    expect(() => ThreadmillModule.forRootAsync({ name: '', useFactory: () => ({}) })).toThrow(/name: got ""/);

    // Factories resolve as the module compiles.
    const error = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRootAsync({
          name: 'critical',
          useFactory: () => ({ name: 'payments', connection: second.url }),
        }),
      ],
    })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThreadmillConfigError);
    expect((error as Error).message).toContain(
      'the options factory answered "payments" for the module named "critical"',
    );
  });

  it('a server of a backend the application does not declare fails to listen, naming it', async () => {
    const testing = await Test.createTestingModule({
      imports: [ThreadmillModule.forRoot({ connection: redisUrl(), alias: uniqueAlias() })],
    }).compile();
    testing.useLogger(false);
    const micro = testing.createNestMicroservice({
      strategy: new ThreadmillServer({ backend: 'critical' }),
      logger: false,
    });
    const error = await micro.listen().catch((e: unknown) => e);
    await micro.close().catch(() => undefined);
    expect((error as Error).message).toContain('found no ThreadmillModule of backend "critical"');
  });
});
