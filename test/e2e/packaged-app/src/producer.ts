// Enqueues a task and a handler's run, waits for the worker's results, and prints what happened as one JSON line.
import { NestFactory } from '@nestjs/core';
import { InvalidEnqueueError, TaskQueue } from '@threadmill/nestjs';
import { GreetService } from './greet.service.js';
import { WorkerModule } from './worker.module.js';

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error'] });
  const tasks = app.get(TaskQueue);
  const greeted = await tasks.enqueue(GreetService, 'greet', ['Ada', { greeting: 'Hello' }]);
  const shouted = await tasks.enqueue('greetings.shout', [{ text: 'hello' }]);
  const task = await tasks.waitFor<string>(greeted.id, { timeoutMs: 30_000 });
  const handler = await tasks.waitFor<string>(shouted.id, { timeoutMs: 30_000 });
  let refused = '';
  try {
    await tasks.enqueue(GreetService, 'greet', ['Ada', { greeting: 'x' }]);
  } catch (error) {
    if (!(error instanceof InvalidEnqueueError)) throw error;
    refused = error.message;
  }
  await app.close();
  console.log(
    JSON.stringify({
      task: { status: task.status, returnValue: task.returnValue },
      handler: { status: handler.status, returnValue: handler.returnValue },
      refused,
    }),
  );
}

// No top-level await: the same script compiles as CommonJS.
void main();
