#!/usr/bin/env node
// Idle enqueue-to-start latency of the benchmark's Threadmill worker, with
// the time each stage takes: producer call → Redis stores it (enqueuedAt) →
// the handler starts. Usage: node idle-latency.mjs [samples]
import { RedisServer } from '@threadmill/nestjs/testing';
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const samples = Number(process.argv[2] ?? 200);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload, now } = await import(join(dist, 'workers/protocol.js'));
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
const child = fork(join(dist, 'workers/threadmill-worker.js'), [], {
  env: { ...process.env, REDIS_URL: server.url, BENCH_QUEUE: 'bench', THREADMILL_POOL_SLOT: '0' },
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
await new Promise((resolve) => child.on('message', (m) => m.type === 'ready' && resolve()));
await delay(500);
const calls = [];
for (let i = 0; i < samples; i++) {
  const t = now();
  await producer.enqueue(payload(i, t));
  calls.push(now() - t);
  await delay(5);
}
const stats = await new Promise((resolve) => {
  child.on('message', (m) => m.type === 'stats' && resolve(m));
  setTimeout(() => child.send({ cmd: 'stats' }), 200);
});
const pct = (values, p) => [...values].sort((a, b) => a - b)[Math.ceil((p / 100) * values.length) - 1];
console.log(
  `enqueue call (producer round trip): p50 ${pct(calls, 50).toFixed(2)} ms, p99 ${pct(calls, 99).toFixed(2)} ms`,
);
console.log(
  `enqueue-to-start: p50 ${pct(stats.latencies, 50).toFixed(2)} ms, p99 ${pct(stats.latencies, 99).toFixed(2)} ms (${stats.latencies.length} samples)`,
);
child.kill('SIGTERM');
await producer.close();
await server.stop();
process.exit(0);
