import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Task, TaskBackend, TaskInspector, TaskQueue, ThreadmillModule } from '@threadmill/nestjs';

/** The queue every case of the scale suite stores into. */
export const SCALE_QUEUE = 'scale';

/** The tasks the scale suite's runs call; no worker runs them: the cases claim and acknowledge through the backend. */
@Injectable()
class ScaleTasks {
  @Task({ name: 'scale.noop', queue: SCALE_QUEUE })
  noop(_payload: { id: number; email: string }): void {}

  /** One run at a time per customer: a limit group per key, its other runs held back. */
  @Task({
    name: 'scale.perCustomer',
    queue: SCALE_QUEUE,
    limit: { concurrency: 1, key: ([customer]) => String(customer) },
  })
  perCustomer(_customer: string): void {}
}

/** A producer application on `url` (alias `scale`, results not kept) and the parts of it the cases call. */
export interface ScaleApp {
  readonly app: INestApplicationContext;
  readonly queue: TaskQueue;
  readonly inspector: TaskInspector;
  readonly backend: TaskBackend;
}

export async function scaleApp(url: string): Promise<ScaleApp> {
  @Module({
    imports: [ThreadmillModule.forRoot({ connection: url, alias: 'scale', queues: [SCALE_QUEUE], resultTtlMs: 0 })],
    providers: [ScaleTasks],
  })
  class ScaleModule {}
  const app = await NestFactory.createApplicationContext(ScaleModule, { logger: ['error'] });
  return { app, queue: app.get(TaskQueue), inspector: app.get(TaskInspector), backend: app.get(TaskBackend) };
}

/** The benchmark's payload of run `i`. */
export function scalePayload(i: number): { id: number; email: string } {
  return { id: i, email: `user${i}@example.com` };
}
