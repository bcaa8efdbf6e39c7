import type { DynamicModule, Type } from '@nestjs/common';
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
import { ThreadmillWorkerModule } from '../../libs/threadmill/src/worker/threadmill-worker.module.js';
import { WorkerService } from '../../libs/threadmill/src/worker/worker.service.js';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from './backend.js';

/** The in-process worker of a harness: pool options plus the role's switches. */
export interface HarnessWorker {
  queues?: string[];
  concurrency?: number;
  prefetch?: number;
  exitEmpty?: boolean;
  shutdownTimeoutMs?: number;
  maxTasks?: number;
  /** Run the broker too. @defaultValue true */
  broker?: boolean;
}

export interface HarnessOptions {
  options?: ThreadmillModuleOptions;
  /** Run a worker in this process (consumer and broker); false for a producer only. */
  worker?: HarnessWorker | false;
  imports?: (Type | DynamicModule)[];
}

/** A Nest application with Threadmill on the test Redis, under a fresh alias. */
export class Harness {
  private constructor(
    readonly module: TestingModule,
    readonly alias: string,
  ) {}

  static async start({
    options = {},
    worker = false,
    imports = [FixtureTasksModule],
  }: HarnessOptions = {}): Promise<Harness> {
    const alias = options.alias ?? uniqueAlias();
    const workerModules = worker
      ? [
          ThreadmillWorkerModule.register({
            queues: worker.queues ?? [],
            concurrency: worker.concurrency ?? 4,
            prefetch: worker.prefetch ?? 2,
            exitEmpty: worker.exitEmpty ?? false,
            shutdownTimeoutMs: worker.shutdownTimeoutMs ?? 10_000,
            role: { consume: true, broker: worker.broker ?? true, slot: 0, maxTasks: worker.maxTasks ?? 0 },
          }),
        ]
      : [];
    const module = await Test.createTestingModule({
      imports: [
        ThreadmillModule.forRoot({ connection: redisUrl(), queues: FIXTURE_QUEUES, ...options, alias }),
        ...imports,
        ...workerModules,
      ],
    }).compile();
    module.useLogger(['error']);
    await module.init();
    return new Harness(module, alias);
  }

  get queue(): TaskQueue {
    return this.module.get(TaskQueue);
  }

  get backend(): RedisTaskBackend {
    return this.module.get(TaskBackend) as RedisTaskBackend;
  }

  get worker(): WorkerService {
    return this.module.get(WorkerService);
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
    try {
      await this.module.get(WorkerService, { strict: false }).drain();
    } catch {
      // no worker in this harness
    }
    await this.module.close();
  }
}
