/**
 * The benchmark's two enqueue phases for Threadmill in this process, timed, to profile the producer.
 *
 * Run: `node [--cpu-prof --cpu-prof-dir=DIR] dist/benchmarks/tools/profile-enqueue.js [N=50000]` after
 * `npm run build`, then `profile-summary` on the profile.
 *
 * N single enqueues, 64 in flight (left out with BULK_ONLY=1), then N in
 * bulk calls of 1,000; prints the runs per second of each.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { enqueueOneByOne } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { enqueueInBulk } from '../lib/tool-support.js';

const n = Number(process.argv[2] ?? 50_000);
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench-single');
if (!process.env['BULK_ONLY']) {
  const started = performance.now();
  await enqueueOneByOne(producer, n, 64);
  const ms = performance.now() - started;
  console.log(`enqueued ${n} one by one (64 in flight) in ${ms.toFixed(0)} ms: ${Math.round(n / (ms / 1000))}/s`);
}
const bulkStart = performance.now();
await enqueueInBulk(producer, n);
const bulkMs = performance.now() - bulkStart;
console.log(`enqueued ${n} in bulk (1000 per call) in ${bulkMs.toFixed(0)} ms: ${Math.round(n / (bulkMs / 1000))}/s`);
await producer.close();
await server.stop();
