import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import BeeQueue from 'bee-queue';
import { Queue } from 'bullmq';
import type { BenchPayload } from '../workers/protocol.js';
import { threadmillProducer, type Producer } from './producers.js';

/**
 * A system of the memory row, at its defaults: the producer and worker that
 * fill and drain queue `bench`, and the system's own count of the runs it
 * finished, by which the row knows the drain is over (the workers count a
 * handler call before the system stores its outcome).
 */
export interface MemorySubject {
  /** A producer at the system's defaults (its bulk API fills the queue). */
  producer(url: string): Promise<Producer>;
  /** The `BENCH_SYSTEM` of `workers/defaults-worker.ts`. */
  readonly worker: string;
  /** A client reading the number of runs of queue `bench` the system recorded as finished. */
  counter(url: string): Promise<FinishedCounter>;
}

export interface FinishedCounter {
  finished(): Promise<number>;
  close(): Promise<void>;
}

const connection = (url: string) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
};

/** Threadmill's counts (the size of the queue's finished indexes), read through its TaskQueue. */
async function threadmillCounter(url: string): Promise<FinishedCounter> {
  @Module({ imports: [ThreadmillModule.forRoot({ connection: url, alias: 'bench', queues: ['bench'] })] })
  class CounterModule {}
  const app = await NestFactory.createApplicationContext(CounterModule, { logger: ['error'] });
  const queue = app.get(TaskQueue);
  return {
    finished: async () => {
      const [counts] = await queue.counts(['bench']);
      return counts!.successful + counts!.failed;
    },
    close: () => app.close(),
  };
}

/** The memory row's systems, by the key of the system of `systems.ts` whose defaults they run. */
export const MEMORY_SUBJECTS: Readonly<Record<string, MemorySubject>> = {
  'threadmill-defaults': {
    // The default enqueueMany (atomic), as the threadmill-defaults system's producer.
    producer: (url) => threadmillProducer(url, 'bench', { atomicBulk: true }),
    worker: 'threadmill',
    counter: threadmillCounter,
  },
  bullmq: {
    producer: async (url) => {
      const queue = new Queue<BenchPayload>('bench', { connection: connection(url) });
      await queue.waitUntilReady();
      return {
        enqueue: (data) => queue.add('noop', data),
        enqueueBulk: (data) => queue.addBulk(data.map((d) => ({ name: 'noop', data: d }))),
        close: () => queue.close(),
      };
    },
    worker: 'bullmq',
    counter: async (url) => {
      const queue = new Queue('bench', { connection: connection(url) });
      return {
        finished: async () => {
          const counts = await queue.getJobCounts('completed', 'failed');
          return (counts['completed'] ?? 0) + (counts['failed'] ?? 0);
        },
        close: () => queue.close(),
      };
    },
  },
  'bee-queue': {
    producer: async (url) => {
      const queue = new BeeQueue<BenchPayload>('bench', { redis: connection(url) });
      await queue.ready();
      return {
        enqueue: (data) => queue.createJob(data).save(),
        enqueueBulk: (data) => queue.saveAll(data.map((d) => queue.createJob(d))),
        close: () => queue.close(),
      };
    },
    worker: 'bee-queue',
    counter: async (url) => {
      // Not a worker, and deaf to events: a reader of counts only.
      const queue = new BeeQueue('bench', { redis: connection(url), isWorker: false, getEvents: false });
      await queue.ready();
      return {
        finished: async () => {
          const health = await queue.checkHealth();
          return health.succeeded + health.failed;
        },
        close: () => queue.close(),
      };
    },
  },
};
