#!/usr/bin/env node
// Redis memory per pending run: bulk-enqueues N runs of the benchmark's
// payload into a fresh redis-server and divides the growth of `used_memory`.
// Usage: node pending-memory.mjs [N]
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const n = Number(process.argv[2] ?? 100_000);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const server = await RedisServer.start();
const admin = new Redis(server.url);
const memory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))[1]);
const producer = await threadmillProducer(server.url, 'bench');
const before = await memory();
for (let i = 0; i < n; i += 1000) {
  await producer.enqueueBulk(Array.from({ length: Math.min(1000, n - i) }, (_, j) => payload(i + j)));
}
console.log(`${n} pending runs: ${Math.round(((await memory()) - before) / n)} bytes of Redis memory each`);
await producer.close();
admin.disconnect();
await server.stop();
