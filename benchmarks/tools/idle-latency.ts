/**
 * Idle enqueue-to-start latency of the benchmark's Threadmill worker, and the producer's call round trip.
 *
 * Run: `node dist/benchmarks/tools/idle-latency.js [samples=200]` after `npm run build`.
 *
 * As the benchmark's latency phase: with the worker idle, runs are enqueued
 * 5 ms apart, each carrying its enqueue time; the handler records
 * enqueue-to-start.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { fork } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { now, payload, type FromWorker } from '../workers/protocol.js';

const samples = Number(process.argv[2] ?? 200);
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
const worker = fork(fileURLToPath(new URL('../workers/threadmill-worker.js', import.meta.url)), [], {
  env: { ...process.env, REDIS_URL: server.url, BENCH_QUEUE: 'bench', THREADMILL_POOL_SLOT: '0' },
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
await new Promise<void>((resolve) => worker.on('message', (m: FromWorker) => m.type === 'ready' && resolve()));
await delay(500);
const calls: number[] = [];
for (let i = 0; i < samples; i++) {
  const t = now();
  await producer.enqueue(payload(i, t));
  calls.push(now() - t);
  await delay(5);
}
const { latencies } = await new Promise<{ latencies: number[] }>((resolve) => {
  worker.on('message', (m: FromWorker) => m.type === 'stats' && resolve(m));
  setTimeout(() => worker.send({ cmd: 'stats' }), 200);
});
const p = (values: number[], at: number) => percentile(values, at).toFixed(2);
console.log(`enqueue call (producer round trip): p50 ${p(calls, 50)} ms, p99 ${p(calls, 99)} ms`);
console.log(`enqueue-to-start: p50 ${p(latencies, 50)} ms, p99 ${p(latencies, 99)} ms (${latencies.length} samples)`);
worker.kill('SIGTERM');
await producer.close();
await server.stop();
process.exit(0);
