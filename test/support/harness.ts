import type { DynamicModule, INestMicroservice, LoggerService, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  TaskQueue,
  TaskStatus,
  ThreadmillModule,
  type TaskResult,
  type ThreadmillModuleOptions,
} from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { TaskBackend } from '../../libs/threadmill/src/backend/task-backend.js';
import { ThreadmillServer } from '@threadmill/nestjs/microservices';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from './backend.js';

/** The in-process worker of a harness: pool options plus the role's switches. */
export interface HarnessWorker {
  queues?: string[];
  concurrency?: number;
  /** A fixed prefetch, or 'adaptive' for the worker's default. @defaultValue 2 */
  prefetch?: number | 'adaptive';
  exitEmpty?: boolean;
  shutdownTimeoutMs?: number;
  maxTasks?: number;
  /** Run the broker too. @defaultValue true */
  broker?: boolean;
  /** How often the worker summarises its stale acknowledgements. @defaultValue 60000 */
  logSummaryIntervalMs?: number;
}

export interface HarnessOptions {
  options?: ThreadmillModuleOptions;
  /** Run a worker in this process (consumer and broker); false for a producer only. */
  worker?: HarnessWorker | false;
  imports?: (Type | DynamicModule)[];
  /** Where Nest's and Threadmill's lines go. @defaultValue the console, errors only */
  logger?: LoggerService;
}

/**
 * A Nest application with Threadmill on the test Redis, under a fresh alias:
 * a producer, or with `worker` a microservice served by a ThreadmillServer.
 */
export class Harness {
  private constructor(
    readonly module: TestingModule,
    readonly alias: string,
    private readonly app: INestMicroservice | undefined,
    private readonly server: ThreadmillServer | undefined,
  ) {}

  static async start({
    options = {},
    worker = false,
    imports = [FixtureTasksModule],
    logger,
  }: HarnessOptions = {}): Promise<Harness> {
    const alias = options.alias ?? uniqueAlias();
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, ...options, alias }),
        ...imports,
      ],
    }).compile();
    module.useLogger(logger ?? ['error']);
    if (!worker) {
      await module.init();
      return new Harness(module, alias, undefined, undefined);
    }
    const server = new ThreadmillServer(
      {
        queues: worker.queues ?? [],
        concurrency: worker.concurrency ?? 4,
        prefetch: worker.prefetch === 'adaptive' ? undefined : (worker.prefetch ?? 2),
        exitEmpty: worker.exitEmpty ?? false,
        shutdownTimeoutMs: worker.shutdownTimeoutMs ?? 10_000,
        broker: worker.broker ?? true,
        maxTasks: worker.maxTasks ?? 0,
        logSummaryIntervalMs: worker.logSummaryIntervalMs,
      },
      { consume: true, broker: worker.broker ?? true, slot: 0, maxTasks: worker.maxTasks ?? 0 },
    );
    const app = module.createNestMicroservice({ strategy: server, logger: logger ?? ['error'] });
    await app.listen();
    return new Harness(module, alias, app, server);
  }

  get queue(): TaskQueue {
    return this.module.get(TaskQueue);
  }

  get backend(): RedisTaskBackend {
    return this.module.get(TaskBackend) as RedisTaskBackend;
  }

  /** The worker's server; only for a harness started with `worker`. */
  get worker(): ThreadmillServer {
    if (!this.server) throw new Error('this harness runs no worker: start it with { worker: {...} }');
    return this.server;
  }

  /** Polls run `id` until `done(result)` holds (default: finished), or fails after `timeoutMs`. */
  async waitFor(
    id: string,
    done: (result: TaskResult) => boolean = (r) => r.status === TaskStatus.SUCCESSFUL || r.status === TaskStatus.FAILED,
    timeoutMs = 15_000,
  ): Promise<TaskResult> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = await this.queue.getResult(id);
      if (done(result)) return result;
      if (Date.now() > deadline) {
        throw new Error(`run ${id} still ${result.status} after ${timeoutMs} ms: ${JSON.stringify(result)}`);
      }
      await delay(20);
    }
  }

  async close(): Promise<void> {
    // The microservice drains its server before Nest destroys any provider.
    if (this.app) await this.app.close();
    else await this.module.close();
  }
}
