import BeeQueue from 'bee-queue';
import type { BenchPayload } from './protocol.js';
import { Recorder } from './recorder.js';
import { SIMULATED_IO, simulateIo } from './simulated-io.js';

const recorder = new Recorder();
const url = new URL(process.env['REDIS_URL']!);
// bee-queue's documented settings for throughput: no events, no job objects kept.
const queue = new BeeQueue<BenchPayload>(process.env['BENCH_QUEUE']!, {
  redis: { host: url.hostname, port: Number(url.port) },
  isWorker: true,
  getEvents: false,
  sendEvents: false,
  storeJobs: false,
  removeOnSuccess: true,
  activateDelayedJobs: false,
});
queue.process(Number(process.env['BENCH_CONCURRENCY'] ?? 100), async (job) => {
  if (SIMULATED_IO) await simulateIo(job.data);
  recorder.record(job.data);
});
await queue.ready();
recorder.ready();
process.once('SIGTERM', () => void queue.close().then(() => process.exit(0)));
