/**
 * Redis memory per pending run: the growth of `used_memory` over N bulk-enqueued runs of the benchmark's payload.
 *
 * Run: `node dist/benchmarks/tools/pending-memory.js [N=100000]` after `npm run build`.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { threadmillProducer } from '../lib/producers.js';
import { enqueueInBulk } from '../lib/tool-support.js';

const n = Number(process.argv[2] ?? 100_000);
const server = await RedisServer.start();
const admin = new Redis(server.url);
const memory = async () => Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1]);
const producer = await threadmillProducer(server.url, 'bench');
const before = await memory();
await enqueueInBulk(producer, n);
console.log(`${n} pending runs: ${Math.round(((await memory()) - before) / n)} bytes of Redis memory each`);
await producer.close();
admin.disconnect();
await server.stop();
