import { Injectable, Module, type DynamicModule, type OnApplicationBootstrap } from '@nestjs/common';
import { runWorker, Task, ThreadmillModule } from '@threadmill/nestjs';
import type { BenchPayload } from './protocol.js';

/** The handler and the ready signal `startThreadmill` was given (Nest builds the provider, not this module). */
let run: (payload: BenchPayload) => Promise<unknown> = async () => undefined;
let onReady: () => void = () => undefined;

@Injectable()
class DefaultsTasks implements OnApplicationBootstrap {
  // The task the benchmark's Threadmill producers enqueue.
  @Task({ name: 'bench.noop', queue: 'bench' })
  noop(payload: BenchPayload): Promise<unknown> {
    return run(payload);
  }

  onApplicationBootstrap(): void {
    onReady();
  }
}

@Module({})
class DefaultsWorkerModule {}

/**
 * A Threadmill pool member for the memory row: the module and the worker at
 * every default (results kept a day, the default batch and prefetch) but the
 * concurrency, as the `threadmill-defaults` system runs.
 */
export async function startThreadmill(
  url: string,
  concurrency: number,
  handler: (payload: BenchPayload) => Promise<unknown>,
  ready: () => void,
): Promise<void> {
  run = handler;
  onReady = ready;
  const module: DynamicModule = {
    module: DefaultsWorkerModule,
    imports: [ThreadmillModule.forRoot({ connection: url, alias: 'bench', queues: ['bench'] })],
    providers: [DefaultsTasks],
  };
  // One pool member (no supervisor), as each peer runs one worker process.
  process.env['THREADMILL_POOL_SLOT'] ??= '0';
  await runWorker(module, { argv: ['--queues', 'bench', '--concurrency', String(concurrency)] });
}
