#!/usr/bin/env node
// The benchmark's two enqueue phases for Threadmill alone, as `npm run bench`
// runs them in a fresh process (20,000 single enqueues, 64 in flight, then 20
// bulk calls of 1,000), with the time of each bulk call: how far the phase's
// figure is from a warm producer's (`ab-bulk.mjs`), and where. Each
// repetition makes new producers in the same process, as the benchmark's
// repeats do. `atomic` makes each bulk call the default atomic enqueueMany
// instead of the benchmark's `atomic: false`.
// Usage: node bulk-phase.mjs [repetitions=3] [pipelined|atomic]
import { RedisServer } from '@threadmill/nestjs/testing';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repetitions = Number(process.argv[2] ?? 3);
const atomicBulk = process.argv[3] === 'atomic';
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { enqueueOneByOne } = await import(join(dist, 'lib/phases.js'));
const n = 20_000;
const bulkSize = 1_000;
const server = await RedisServer.start();
for (let repetition = 1; repetition <= repetitions; repetition++) {
  const single = await threadmillProducer(server.url, 'bench-single');
  const main = await threadmillProducer(server.url, 'bench', { atomicBulk });
  await enqueueOneByOne(single, n, 64);
  const calls = [];
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
