import { Controller, Injectable, Module, Post, type INestApplication } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  RedisUnavailableError,
  Task,
  TaskBackend,
  TaskQueue,
  TaskStatus,
  ThreadmillConfigError,
  ThreadmillModule,
  UnknownTaskError,
  WrongBackendError,
  getTaskQueueToken,
} from '@threadmill/nestjs';
import {
  InMemoryTaskBackend,
  RunawayRunsError,
  ThreadmillTesting,
  ThreadmillTestingModule,
  getThreadmillTestingToken,
} from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { ContractTasksModule, SendWelcome } from '../fixtures/fixture-contracts.js';
import { NamedPayments, NamedReports, NamedTasksModule } from '../fixtures/fixture-named-backends.js';
import {
  FIXTURE_QUEUES,
  FailService,
  FixtureTasksModule,
  MathService,
  SlowService,
} from '../fixtures/fixture-tasks.js';

/** A task that enqueues the next step of a chain, as an app's tasks do. */
@Injectable()
class ChainService {
  constructor(private readonly queue: TaskQueue) {}

  @Task({ queue: 'chains' })
  async step(n: number, last: number): Promise<number> {
    if (n < last) await this.queue.enqueue(ChainService, 'step', [n + 1, last]);
    return n;
  }

  /** Enqueues itself forever. */
  @Task({ queue: 'chains' })
  async forever(n: number): Promise<void> {
    await this.queue.enqueue(ChainService, 'forever', [n + 1]);
  }
}

@Module({ providers: [ChainService] })
class ChainModule {}

let module: TestingModule | undefined;
afterEach(async () => {
  await module?.close();
  module = undefined;
});

async function boot(options: Parameters<typeof ThreadmillTestingModule.forRoot>[0]) {
  module = await Test.createTestingModule({
    imports: [ThreadmillTestingModule.forRoot(options), FixtureTasksModule, ContractTasksModule, ChainModule],
  }).compile();
  module.useLogger(['error']);
  await module.init();
  return { queue: module.get(TaskQueue), testing: module.get(ThreadmillTesting) };
}

describe('ThreadmillTestingModule, manual mode', () => {
  it('records runs without running them, their arguments typed by task', async () => {
    const { queue, testing } = await boot({ mode: 'manual' });
    await queue.enqueue(MathService, 'add', [2, 3]);
    await queue.enqueue(SendWelcome, [7, 'ada@example.com']);
    await queue.enqueue('math.multiply', [4, 5]);

    const adds = testing.enqueued(MathService, 'add');
    expectTypeOf(adds[0]!.args).toEqualTypeOf<[a: number, b: number]>();
    expect(adds.map((run) => [run.args, run.status])).toEqual([[[2, 3], TaskStatus.READY]]);
    const welcomes = testing.enqueued(SendWelcome);
    expectTypeOf(welcomes[0]!.args).toEqualTypeOf<[userId: number, email: string]>();
    expect(welcomes.map((run) => [run.queue, run.priority, run.args])).toEqual([['emails', 5, [7, 'ada@example.com']]]);
    expect(testing.enqueued('math.multiply')).toHaveLength(1);
    expect(testing.enqueued().map((run) => run.taskName)).toEqual([
      'MathService.add',
      'contracts.sendWelcome',
      'math.multiply',
    ]);
    expect(() => testing.enqueued(MathService, 'subtract' as never)).toThrow(UnknownTaskError);
  });

  it('runs the next run by priority with runNext, then all of them with runAll', async () => {
    const { queue, testing } = await boot({ mode: 'manual' });
    const low = await queue.enqueue(MathService, 'add', [1, 1]);
    const high = await queue.enqueue(SendWelcome, [1, 'a@example.com']);
    expect(await testing.runNext()).toMatchObject({ id: high.id, status: TaskStatus.SUCCESSFUL });
    expect((await queue.getResult(low.id)).status).toBe(TaskStatus.READY);
    expect((await testing.runAll()).map((run) => [run.id, run.returnValue])).toEqual([[low.id, 2]]);
    expect(await testing.runNext()).toBeNull();
  });

  it('runs the runs that runs enqueue, in order, with runAll', async () => {
    const { queue, testing } = await boot({ mode: 'manual' });
    await queue.enqueue(ChainService, 'step', [1, 4]);
    expect(testing.enqueued(ChainService, 'step')).toHaveLength(1);
    const ran = await testing.runAll();
    expect(ran.map((run) => run.returnValue)).toEqual([1, 2, 3, 4]);
    expect(testing.enqueued(ChainService, 'step').map((run) => run.args)).toEqual([
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ]);
  });

  it('stops runs that enqueue runs without end with a clear error', async () => {
    const { queue, testing } = await boot({ mode: 'manual', maxRuns: 25 });
    await queue.enqueue(ChainService, 'forever', [0]);
    const error = await testing.runAll().catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RunawayRunsError);
    expect((error as Error).message).toMatch(/ran 25 attempts.*ChainService\.forever.*maxRuns/s);
  });

  it('runs a retry again at once, and clear() forgets every run', async () => {
    const { queue, testing } = await boot({ mode: 'manual' });
    const { id } = await queue.enqueue(FailService, 'flaky', [1]);
    expect(await testing.runNext()).toMatchObject({ id, status: TaskStatus.READY, attempts: 1 });
    expect(await testing.runNext()).toMatchObject({ id, status: TaskStatus.SUCCESSFUL, attempts: 2 });
    await testing.clear();
    expect(testing.enqueued()).toEqual([]);
  });
});

describe('ThreadmillTestingModule, immediate mode', () => {
  it('runs each enqueue before it resolves, runs it enqueues included', async () => {
    const { queue, testing } = await boot({ mode: 'immediate' });
    const added = await queue.enqueue(MathService, 'add', [2, 3]);
    expect(added.status).toBe(TaskStatus.READY);
    expect(await queue.getResult(added.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 5 });
    await queue.enqueue(ChainService, 'step', [1, 3]);
    expect(testing.enqueued(ChainService, 'step').map((run) => [run.args[0], run.status])).toEqual([
      [1, TaskStatus.SUCCESSFUL],
      [2, TaskStatus.SUCCESSFUL],
      [3, TaskStatus.SUCCESSFUL],
    ]);
  });

  it("keeps a run's progress and log lines, stored before its enqueue resolves", async () => {
    const { queue } = await boot({ mode: 'immediate' });
    const { id } = await queue.enqueue(SlowService, 'reporting', [2, 3, 0]);
    expect(await queue.getResult(id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      progress: { step: 2, of: 2 },
      logs: ['line 1', 'line 2', 'line 3'],
    });
  });

  it('skips retry backoffs: a flaky run has settled when its enqueue resolves', async () => {
    const { queue } = await boot({ mode: 'immediate' });
    const { id } = await queue.enqueue(FailService, 'flaky', [2]);
    expect(await queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 3 });
  });

  it('keeps a deferred run until the test advances the clock', async () => {
    const { queue, testing } = await boot({ mode: 'immediate' });
    const { id } = await queue.enqueue(MathService, 'add', [1, 2], { delayMs: 60_000 });
    expect((await queue.getResult(id)).status).toBe(TaskStatus.READY);
    await testing.advanceTime(59_000);
    expect((await queue.getResult(id)).status).toBe(TaskStatus.READY);
    await testing.advanceTime(1_000);
    expect(await queue.getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 3 });
  });

  it("boots an app's tasks without repeating its queues", async () => {
    const { queue } = await boot({});
    const { id } = await queue.enqueue(ChainService, 'step', [1, 1]);
    expect(await queue.getResult(id)).toMatchObject({ queue: 'chains', status: TaskStatus.SUCCESSFUL });
  });

  it('stands in for each of several backends, each running only its own tasks', async () => {
    module = await Test.createTestingModule({
      imports: [
        ThreadmillTestingModule.forRoot({ mode: 'manual' }),
        ThreadmillTestingModule.forRoot({ name: 'critical', mode: 'immediate' }),
        NamedTasksModule,
      ],
    }).compile();
    module.useLogger(['error']);
    await module.init();
    const critical = module.get<TaskQueue>(getTaskQueueToken('critical'));
    const charged = await critical.enqueue(NamedPayments, 'charge', [250]);
    expect(await critical.getResult(charged.id)).toMatchObject({ queue: 'payments', status: TaskStatus.SUCCESSFUL });
    expect(module.get<ThreadmillTesting>(getThreadmillTestingToken('critical')).enqueued()).toHaveLength(1);

    const report = await module.get(TaskQueue).enqueue(NamedReports, 'report', ['r-1']);
    expect(report.status).toBe(TaskStatus.READY);
    expect(
      module
        .get(ThreadmillTesting)
        .enqueued()
        .map((run) => run.taskName),
    ).toEqual(['named.report']);
    await expect(module.get(TaskQueue).enqueue(NamedPayments, 'charge', [1])).rejects.toBeInstanceOf(WrongBackendError);
  });

  it('refuses bad testing options, naming each', () => {
    expect(() => ThreadmillTestingModule.forRoot({ mode: 'later' as never, maxRuns: 0 })).toThrow(
      /mode: got "later".*\n.*maxRuns: got 0/,
    );
    expect(() => ThreadmillTestingModule.forRoot({ mode: 'later' as never })).toThrow(ThreadmillConfigError);
  });

  it('refuses to run when a test overrides TaskBackend with another backend, naming the token', async () => {
    const other = new InMemoryTaskBackend({ leaseTtlMs: 30_000, resultTtlMs: 60_000, batchSize: 100 });
    const compiling = Test.createTestingModule({ imports: [ThreadmillTestingModule.forRoot(), FixtureTasksModule] })
      .overrideProvider(TaskBackend)
      .useValue(other)
      .compile();
    await expect(compiling).rejects.toThrow(/TaskBackend: ThreadmillTesting needs the InMemoryTaskBackend/);
  });
});

// A whole application, as a user has it: its own ThreadmillModule on a Redis that is not there.
@Controller('sums')
class SumsController {
  constructor(private readonly queue: TaskQueue) {}

  @Post()
  async create(): Promise<{ id: string }> {
    return { id: (await this.queue.enqueue(MathService, 'add', [20, 22])).id };
  }
}

@Module({
  imports: [
    ThreadmillModule.forRoot({ connection: 'redis://127.0.0.1:1', connectTimeoutMs: 1_000, queues: FIXTURE_QUEUES }),
    FixtureTasksModule,
  ],
  controllers: [SumsController],
})
class ClosedPortAppModule {}

describe('ThreadmillTestingModule in place of an app’s ThreadmillModule', () => {
  let app: INestApplication | undefined;
  afterEach(() => app?.close());

  it('cannot boot the app as it is: its Redis is not there', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [ClosedPortAppModule] }).compile();
    moduleRef.useLogger(false);
    await expect(moduleRef.init()).rejects.toThrow(RedisUnavailableError);
    await moduleRef.close().catch(() => undefined);
  });

  it('boots the whole app with overrideModule, without any Redis, and serves it', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [ClosedPortAppModule] })
      .overrideModule(ThreadmillTestingModule.importedBy(ClosedPortAppModule))
      .useModule(ThreadmillTestingModule.forRoot({ mode: 'immediate' }))
      .compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const response = await fetch(`${await app.getUrl()}/sums`, { method: 'POST' });
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as { id: string };
    expect(await app.get(TaskQueue).getResult(id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 42 });
    expect(
      app
        .get(ThreadmillTesting)
        .enqueued(MathService, 'add')
        .map((run) => run.args),
    ).toEqual([[20, 22]]);
  });

  it('says so when the app imports no ThreadmillModule', () => {
    expect(() => ThreadmillTestingModule.importedBy(ChainModule)).toThrow(/ChainModule imports no ThreadmillModule/);
  });
});
