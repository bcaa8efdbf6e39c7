// The benchmark's Threadmill producer with its enqueue script answered in
// this process (every run stored, at once: the reply of an enqueue that found
// no existing id), so that neither Redis nor the round trip blurs what
// validating, encoding and building the results cost; ioredis's own encoding
// is left out too. For producer-cost.mjs and heap-enqueue.mjs.
import { RedisServer } from '@threadmill/nestjs/testing';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
const { enqueueOneByOne } = await import(join(dist, 'lib/phases.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { scriptCommand } = await import(join(lib, 'backend/redis/scripts/redis-scripts.js'));

const store = RedisTaskBackend.prototype.store;
RedisTaskBackend.prototype.store = function (runs) {
  this.connections.client[scriptCommand('enqueue')] = async () => [Date.now()];
  return store.call(this, runs);
};

/**
 * Starts the producer (its Nest application needs a server to connect to).
 * `enqueue(n)` enqueues n runs one by one (64 callers that each await their
 * enqueue, as in the benchmark), or in bulk (calls of 1,000) with `bulk`.
 */
export async function startProducer(bulk) {
  const server = await RedisServer.start();
  const producer = await threadmillProducer(server.url, 'bench');
  return {
    async enqueue(n) {
      if (bulk) {
        for (let i = 0; i < n; i += 1000)
          await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
        return;
      }
      await enqueueOneByOne(producer, n, 64);
    },
    async stop() {
      await producer.close();
      await server.stop();
    },
  };
}
