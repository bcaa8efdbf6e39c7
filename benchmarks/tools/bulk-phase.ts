/**
 * The benchmark's two enqueue phases for Threadmill alone, in a fresh process, with the time of each bulk call.
 *
 * Run: `node dist/benchmarks/tools/bulk-phase.js [repetitions=3] [pipelined|atomic]` after `npm run build`.
 *
 * As `npm run bench` runs them: 20,000 single enqueues, 64 in flight, then
 * 20 bulk calls of 1,000 (`atomic: false`, or the atomic default with
 * `atomic`). Shows how far the phase's figure is from a warm producer's
 * (`ab-bulk`), and where. Each repetition makes new producers in the same
 * process, as the benchmark's repeats do.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { enqueueOneByOne } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { payload } from '../workers/protocol.js';

const repetitions = Number(process.argv[2] ?? 3);
const atomicBulk = process.argv[3] === 'atomic';
const n = 20_000;
const bulkSize = 1_000;
const server = await RedisServer.start();
for (let repetition = 1; repetition <= repetitions; repetition++) {
  const single = await threadmillProducer(server.url, 'bench-single');
  const main = await threadmillProducer(server.url, 'bench', { atomicBulk });
  await enqueueOneByOne(single, n, 64);
  const calls: string[] = [];
  const started = performance.now();
  for (let first = 0; first < n; first += bulkSize) {
    const callStarted = performance.now();
    await main.enqueueBulk(Array.from({ length: bulkSize }, (_, i) => payload(first + i)));
    calls.push((performance.now() - callStarted).toFixed(1));
  }
  const perSecond = Math.round(n / ((performance.now() - started) / 1000));
  console.log(`repetition ${repetition}: bulk ${perSecond} runs/s; each call (ms): ${calls.join(' ')}`);
  await single.close();
  await main.close();
}
await server.stop();
