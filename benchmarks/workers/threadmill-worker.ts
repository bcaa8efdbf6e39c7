import { Controller, Injectable, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { runWorker, Task, ThreadmillModule } from '@threadmill/nestjs';
import type { BenchPayload } from './protocol.js';
import { Recorder } from './recorder.js';
import { SIMULATED_IO, simulateIo } from './simulated-io.js';

const recorder = new Recorder();

@Injectable()
class BenchTasks implements OnApplicationBootstrap {
  // async, like the peers' processors.
  @Task({ name: 'bench.noop', queue: 'bench' })
  async noop(payload: BenchPayload): Promise<void> {
    if (SIMULATED_IO) await simulateIo(payload);
    recorder.record(payload);
  }

  onApplicationBootstrap(): void {
    recorder.ready();
  }
}

/** The same work as a Nest handler, run through Nest's pipeline; and a request/response handler. */
@Controller()
class BenchHandlers {
  @EventPattern('bench.handler', { queue: 'bench' })
  async handle(@Payload() payload: BenchPayload): Promise<void> {
    if (SIMULATED_IO) await simulateIo(payload);
    recorder.record(payload);
  }

  @MessagePattern('bench.echo', { queue: 'bench' })
  echo(@Payload() payload: BenchPayload): number {
    return payload.id;
  }
}

/**
 * BENCH_DEFAULTS=1 runs the module and the worker at every default (results
 * kept, the default batch and prefetch) but the concurrency BENCH_CONCURRENCY
 * gives, if any: what a user who sets only a concurrency gets; otherwise the
 * throughput settings below. BENCH_RESULT_TTL_MS then overrides only how
 * long results are kept: the price of keeping them, all else equal.
 */
const defaults = process.env['BENCH_DEFAULTS'] === '1';
const resultTtl = process.env['BENCH_RESULT_TTL_MS'];
/** BENCH_QUEUES (comma-separated) names the queues consumed: `bench` alone unless given (`queues-drain`). */
const queues = process.env['BENCH_QUEUES'] ?? 'bench';

@Module({
  imports: [
    ThreadmillModule.forRoot({
      connection: process.env['REDIS_URL'],
      alias: 'bench',
      queues: [...new Set(['bench', 'bench-single', ...queues.split(',')])],
      ...(defaults
        ? resultTtl === undefined
          ? {}
          : { resultTtlMs: Number(resultTtl) }
        : {
            // Like the peers' remove-on-complete: results are not kept.
            resultTtlMs: 0,
            batchSize: Number(process.env['BENCH_BATCH'] ?? 300),
          }),
    }),
  ],
  providers: [BenchTasks],
  controllers: [BenchHandlers],
})
class BenchWorkerModule {}

// One pool member (no supervisor), as each peer runs one worker process.
process.env['THREADMILL_POOL_SLOT'] ??= '0';
await runWorker(BenchWorkerModule, {
  argv: defaults
    ? [
        '--queues',
        queues,
        ...(process.env['BENCH_CONCURRENCY'] ? ['--concurrency', process.env['BENCH_CONCURRENCY']] : []),
      ]
    : [
        '--queues',
        queues,
        '--concurrency',
        process.env['BENCH_CONCURRENCY'] ?? '200',
        '--prefetch',
        process.env['BENCH_PREFETCH'] ?? '1000',
      ],
});
