// Enqueues a run, waits for the worker's result, and prints what happened as one JSON line.
import { NestFactory } from '@nestjs/core';
import { InvalidEnqueueError, TaskQueue } from '@threadmill/nestjs';
import { AppModule, GreetService } from './app.module.js';

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const tasks = app.get(TaskQueue);
const run = await tasks.enqueue(GreetService, 'greet', ['Ada', { greeting: 'Hello' }]);
const result = await tasks.waitFor<string>(run.id, { timeoutMs: 30_000 });
let refused = '';
try {
  await tasks.enqueue(GreetService, 'greet', ['Ada', { greeting: 'x' }]);
} catch (error) {
  if (!(error instanceof InvalidEnqueueError)) throw error;
  refused = error.message;
}
console.log(JSON.stringify({ status: result.status, returnValue: result.returnValue, refused }));
await app.close();
