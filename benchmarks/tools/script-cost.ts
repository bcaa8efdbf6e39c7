/**
 * Redis's cost per run of the claim and acknowledge scripts in batches of B: script time and Redis CPU.
 *
 * Run: `node dist/benchmarks/tools/script-cost.js [B=300]` after `npm run build`;
 * `RESULT_TTL_MS=86400000` keeps results as the module's default does (0 otherwise);
 * `QUEUES=<Q>` spreads the runs evenly over Q queues that every claim names
 * (`bench`, `bench-1`, …); `FILLED=<F>` then fills only the first F of them.
 *
 * Bulk-enqueues 40,000 runs of the benchmark's payload into a fresh
 * redis-server, claims them all through the backend, then acknowledges them
 * all, B runs a call.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { threadmillProducer } from '../lib/producers.js';
import { commandUs, enqueueInBulk, libraryBuild, loadModule, redisCpuUs } from '../lib/tool-support.js';

const N = 40_000;
const B = Number(process.argv[2] ?? 300);
const lib = libraryBuild();
const { RedisConnections } = await loadModule(lib, 'backend/redis/redis-connections.js');
const { RedisTaskBackend } = await loadModule(lib, 'backend/redis/redis.backend.js');
const queueCount = Number(process.env['QUEUES'] ?? 1);
const queues = Array.from({ length: queueCount }, (_, i) => (i === 0 ? 'bench' : `bench-${i}`));
const filled = Number(process.env['FILLED'] ?? queueCount);
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench', { spread: queues.slice(0, filled) });
await enqueueInBulk(producer, N);
const connections = new RedisConnections(server.url, 'bench', 5000);
const backend = new RedisTaskBackend(connections, {
  alias: 'bench',
  leaseTtlMs: 30000,
  resultTtlMs: Number(process.env['RESULT_TTL_MS'] ?? 0),
  batchSize: B,
});
const admin = new Redis(server.url);

await admin.config('RESETSTAT');
const leased: { id: string; queue: string; token: string }[] = [];
const cpu0 = await redisCpuUs(admin);
for (let i = 0; i < N; i += B) leased.push(...(await backend.claim(queues, B, 'h:1:0', i / B)));
const claimUs = await commandUs(admin);
const cpu1 = await redisCpuUs(admin);
await admin.config('RESETSTAT');
for (let i = 0; i < leased.length; i += B) {
  await backend.acknowledge(
    leased
      .slice(i, i + B)
      .map(({ id, queue, token }) => ({ id, queue, token, outcome: { kind: 'successful', returnValue: undefined } })),
  );
}
const ackUs = await commandUs(admin);
const cpu2 = await redisCpuUs(admin);
const perRun = (us: number) => (us / N).toFixed(2);
console.log(
  `B=${B} claimed ${leased.length}: claim script ${perRun(claimUs)} µs/run (redis cpu ${perRun(cpu1 - cpu0)}), ` +
    `ack script ${perRun(ackUs)} µs/run (redis cpu ${perRun(cpu2 - cpu1)})`,
);
await producer.close();
admin.disconnect();
await connections.close();
await server.stop();
