import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
const dist = '/work/main/dist/benchmarks/';
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { RedisConnections } = await import('/work/main/libs/threadmill/dist/backend/redis/redis-connections.js');
const { RedisTaskBackend } = await import('/work/main/libs/threadmill/dist/backend/redis/redis.backend.js');
const server = await RedisServer.start();
const producer = await threadmillProducer(server.url, 'bench');
const N = 20000,
  B = Number(process.argv[2] ?? 100);
for (let i = 0; i < N; i += 1000) await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
const conns = new RedisConnections(server.url, 'bench', 5000);
const backend = new RedisTaskBackend(conns, { alias: 'bench', leaseTtlMs: 30000, resultTtlMs: 0, batchSize: B });
const admin = new Redis(server.url);
await admin.config('RESETSTAT');
let tClaim = 0,
  tAck = 0;
for (let i = 0; i < N; i += B) {
  let t = performance.now();
  const runs = await backend.claim(['bench'], B, 'h:1:0', 0);
  tClaim += performance.now() - t;
  t = performance.now();
  await backend.acknowledge(
    runs.map((r) => ({
      id: r.id,
      queue: r.queue,
      token: r.token,
      outcome: { kind: 'successful', returnValue: undefined },
    })),
  );
  tAck += performance.now() - t;
}
const stats = await admin.info('commandstats');
console.log(
  `batch ${B}: claim ${(tClaim / (N / B)).toFixed(2)} ms/call, ack ${(tAck / (N / B)).toFixed(2)} ms/call (wall, incl. node) → serial ${Math.round(N / ((tClaim + tAck) / 1000))}/s`,
);
for (const line of stats.split('\n').filter((l) => /evalsha|hmget|hset|del|zpopmin|zadd|zrem/.test(l)))
  console.log(line.trim());
await producer.close();
admin.disconnect();
await conns.close();
await server.stop();
