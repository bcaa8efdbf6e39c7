/**
 * Where a producer's garbage comes from: bytes per run by allocating function, enqueuing one by one or in bulk.
 *
 * Run: `node [--no-turbo-inlining] dist/benchmarks/tools/heap-enqueue.js [N=30000] [single|bulk] [top=20]` after
 * `npm run build`.
 *
 * A sampling heap profile of the benchmark's Threadmill producer enqueuing
 * N runs one by one (64 callers that each await their enqueue) or in bulk
 * (calls of 1,000), after a warm-up of the same. As in `producer-cost`, the
 * enqueue script is answered in this process, so only the producer's own
 * code is profiled. `--no-turbo-inlining` shows each function's own share
 * rather than its inliner's.
 */
import { Session } from 'node:inspector/promises';
import { startProducer } from '../lib/in-process-producer.js';
import { summariseHeapProfile, type HeapProfile } from '../lib/profile-summaries.js';

const n = Number(process.argv[2] ?? 30_000);
const mode = process.argv[3] ?? 'single';
const top = Number(process.argv[4] ?? 20);
const producer = await startProducer(mode === 'bulk');
await producer.enqueue(n);
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
await producer.enqueue(n);
const { profile } = await session.post('HeapProfiler.stopSampling');
session.disconnect();
await producer.stop();
console.log(summariseHeapProfile(profile as HeapProfile, n, top));
