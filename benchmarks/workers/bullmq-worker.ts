import { Worker } from 'bullmq';
import type { BenchPayload } from './protocol.js';
import { Recorder } from './recorder.js';
import { SIMULATED_IO, simulateIo } from './simulated-io.js';

const recorder = new Recorder();
const url = new URL(process.env['REDIS_URL']!);
const worker = new Worker<BenchPayload>(
  process.env['BENCH_QUEUE']!,
  async (job) => {
    if (SIMULATED_IO) await simulateIo(job.data);
    recorder.record(job.data);
  },
  {
    connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
    concurrency: Number(process.env['BENCH_CONCURRENCY'] ?? 100),
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 0 },
  },
);
await worker.waitUntilReady();
recorder.ready();
process.once('SIGTERM', () => void worker.close().then(() => process.exit(0)));
