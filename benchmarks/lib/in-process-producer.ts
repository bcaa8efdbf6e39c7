/**
 * The benchmark's Threadmill producer with its enqueue script answered in
 * this process (every run stored, at once: the reply of an enqueue that
 * found no existing id), so that neither Redis nor the round trip blurs what
 * validating, encoding and building the results cost; ioredis's own
 * encoding is left out too. For the tools `producer-cost` and `heap-enqueue`.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { payload } from '../workers/protocol.js';
import { enqueueOneByOne } from './phases.js';
import { threadmillProducer } from './producers.js';
import { libraryBuild, loadModule } from './tool-support.js';

/** How a tool drives the producer. */
export interface InProcessProducer {
  /** Enqueues n runs one by one (64 callers that each await their enqueue), or in calls of 1,000 when started `bulk`. */
  enqueue(n: number): Promise<void>;
  stop(): Promise<void>;
}

let answering = false;

/** From now on, every backend of this process's library build answers its enqueue script itself. */
async function answerEnqueuesInProcess(): Promise<void> {
  if (answering) return;
  answering = true;
  // This checkout's build: the module instances the producer uses.
  const lib = libraryBuild();
  const { RedisTaskBackend } = await loadModule(lib, 'backend/redis/redis.backend.js');
  const { scriptCommand } = await loadModule(lib, 'backend/redis/scripts/redis-scripts.js');
  const store = RedisTaskBackend.prototype.store;
  RedisTaskBackend.prototype.store = function (runs) {
    const client = this.connections.client as unknown as Record<string, unknown>;
    client[scriptCommand('enqueue')] = async () => [Date.now()];
    return store.call(this, runs);
  };
}

/** Starts the producer (its Nest application needs a server to connect to, which stores nothing). */
export async function startProducer(bulk: boolean): Promise<InProcessProducer> {
  await answerEnqueuesInProcess();
  const server = await RedisServer.start();
  const producer = await threadmillProducer(server.url, 'bench');
  return {
    async enqueue(n) {
      if (!bulk) return enqueueOneByOne(producer, n, 64);
      for (let i = 0; i < n; i += 1000)
        await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
    },
    async stop() {
      await producer.close();
      await server.stop();
    },
  };
}
