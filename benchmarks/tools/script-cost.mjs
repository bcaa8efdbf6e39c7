#!/usr/bin/env node
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// Redis cost of the claim and acknowledge scripts per run (INFO commandstats
// and INFO cpu), claims first, then acknowledgements, in batches of B.
// Usage: node script-cost.mjs [B]
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/backend/redis/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { RedisConnections } = await import(join(lib, 'redis-connections.js'));
const { RedisTaskBackend } = await import(join(lib, 'redis.backend.js'));
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
const N = 40000,
  B = Number(process.argv[2] ?? 300);
for (let i = 0; i < N; i += 1000) await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
const conns = new RedisConnections(server.url, 'bench', 5000);
const backend = new RedisTaskBackend(conns, { alias: 'bench', leaseTtlMs: 30000, resultTtlMs: 0, batchSize: B });
const admin = new Redis(server.url);
const evalUs = async () =>
  Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
const cpu = async () => {
  const i = await admin.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(i)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(i)[1]);
};
await admin.config('RESETSTAT');
const all = [];
let c0 = await cpu();
for (let i = 0; i < N; i += B) all.push(...(await backend.claim(['bench'], B, 'h:1:0', 0)));
const claimUs = await evalUs();
let c1 = await cpu();
await admin.config('RESETSTAT');
for (let i = 0; i < all.length; i += B)
  await backend.acknowledge(
    all.slice(i, i + B).map((r) => ({
      id: r.id,
      queue: r.queue,
      token: r.token,
      outcome: { kind: 'successful', returnValue: undefined },
    })),
  );
const ackUs = await evalUs();
let c2 = await cpu();
console.log(
  `B=${B} claimed ${all.length}: claim script ${(claimUs / N).toFixed(2)} µs/run (redis cpu ${(((c1 - c0) * 1e6) / N).toFixed(2)}), ack script ${(ackUs / N).toFixed(2)} µs/run (redis cpu ${(((c2 - c1) * 1e6) / N).toFixed(2)})`,
);
await producer.close();
admin.disconnect();
await conns.close();
await server.stop();
