import { Injectable, Module } from '@nestjs/common';
import { runWorker, Task, TaskContext, ThreadmillModule } from '@threadmill/nestjs';
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { now } from './protocol.js';

/**
 * A pool of slow tasks for `tools/slow-fairness`: each run sleeps the ms it is
 * given and logs `pid start end runId` (epoch ms) to the list WITNESS_KEY of the
 * same Redis: a record outside Threadmill of when and where each run executed.
 */
const witness = new Redis(process.env['REDIS_URL']!);
const WITNESS_KEY = process.env['WITNESS_KEY'] ?? 'witness:slow';

@Injectable()
class SlowTasks {
  @Task({ name: 'bench.slow', queue: 'bench' })
  async slow(ms: number, context: TaskContext): Promise<void> {
    const started = now();
    await sleep(ms);
    await witness.rpush(WITNESS_KEY, `${process.pid} ${started} ${now()} ${context.id}`);
  }
}

@Module({
  imports: [ThreadmillModule.forRoot({ connection: process.env['REDIS_URL'], alias: 'bench', queues: ['bench'] })],
  providers: [SlowTasks],
})
class SlowWorkerModule {}

await runWorker(SlowWorkerModule);
