#!/usr/bin/env node
// Profiles the benchmark's single-enqueue phase (N calls, 64 in flight) in
// this process. Usage: node --cpu-prof --cpu-prof-dir=DIR profile-enqueue.mjs [N]
import { RedisServer } from '@threadmill/nestjs/testing';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const n = Number(process.argv[2] ?? 50_000);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { enqueueOneByOne } = await import(join(dist, 'lib/phases.js'));
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench-single');
const started = performance.now();
if (!process.env.BULK_ONLY) await enqueueOneByOne(producer, n, 64);
const ms = performance.now() - started;
console.log(`enqueued ${n} one by one (64 in flight) in ${ms.toFixed(0)} ms: ${Math.round(n / (ms / 1000))}/s`);
const bulkStart = performance.now();
for (let i = 0; i < n; i += 1000) await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
const bulkMs = performance.now() - bulkStart;
console.log(`enqueued ${n} in bulk (1000 per call) in ${bulkMs.toFixed(0)} ms: ${Math.round(n / (bulkMs / 1000))}/s`);
await producer.close();
await server.stop();
