/**
 * The worker of the memory row: the system BENCH_SYSTEM (`threadmill`,
 * `bullmq` or `bee-queue`) on queue `bench` at its defaults but the concurrency, so that Redis
 * keeps what a finished run leaves by default (Threadmill results for a day,
 * BullMQ's completed jobs, bee-queue's succeeded jobs). Every handler returns
 * the same small value, which each system stores as it does a result.
 */
import type { BenchPayload } from './protocol.js';
import { Recorder } from './recorder.js';

/** What every handler of the memory row returns. */
const RESULT = { ok: true } as const;

const recorder = new Recorder();
const url = new URL(process.env['REDIS_URL']!);
const queue = 'bench';
const concurrency = Number(process.env['BENCH_CONCURRENCY'] ?? 100);

async function handle(payload: BenchPayload): Promise<typeof RESULT> {
  recorder.record(payload);
  return RESULT;
}

switch (process.env['BENCH_SYSTEM']) {
  case 'threadmill': {
    const { startThreadmill } = await import('./defaults-threadmill.js');
    await startThreadmill(url.href, concurrency, handle, () => recorder.ready());
    break;
  }
  case 'bullmq': {
    const { Worker } = await import('bullmq');
    const worker = new Worker<BenchPayload>(queue, (job) => handle(job.data), {
      connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
      concurrency,
    });
    await worker.waitUntilReady();
    recorder.ready();
    process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
    break;
  }
  case 'bee-queue': {
    const { default: BeeQueue } = await import('bee-queue');
    const bee = new BeeQueue<BenchPayload>(queue, { redis: { host: url.hostname, port: Number(url.port) } });
    bee.process(concurrency, (job) => handle(job.data));
    await bee.ready();
    recorder.ready();
    process.once('SIGTERM', () => void bee.close().then(() => process.exit(0)));
    break;
  }
  default:
    throw new Error(`BENCH_SYSTEM=${process.env['BENCH_SYSTEM']}: give threadmill, bullmq or bee-queue.`);
}
