import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { defineTask, Task, TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import { ThreadmillClient } from '@threadmill/nestjs/microservices';
import BeeQueue from 'bee-queue';
import { Queue } from 'bullmq';
import { firstValueFrom } from 'rxjs';
import { payload, type BenchPayload } from '../workers/protocol.js';

/** How a benchmark enqueues into one system. */
export interface Producer {
  /** One run through the single-run API. */
  enqueue(data: BenchPayload): Promise<unknown>;
  /** Many runs through the bulk API, in one call. */
  enqueueBulk(data: BenchPayload[]): Promise<unknown>;
  /** One request/response: a run whose value the producer waits for (systems with a `roundtrip` phase). */
  roundTrip?(data: BenchPayload): Promise<unknown>;
  close(): Promise<void>;
}

/** The worker's `bench.echo` handler, for a producer without the worker's code. */
const BenchEcho = defineTask<[BenchPayload], number>('bench.echo', { queue: 'bench' });

@Injectable()
class BenchTasks {
  /** Declared for the producer's registry; the benchmark worker runs it. */
  @Task({ name: 'bench.noop', queue: 'bench' })
  noop(_payload: BenchPayload): void {}
}

/**
 * @param atomicBulk whether `enqueueBulk` makes one atomic `enqueueMany` call
 * (the library's default) or one with `atomic: false`, stored in pipelined
 * chunks (the benchmark's Threadmill row)
 * @param task what the runs call: the `@Task()` method, or the worker's Nest
 * handler (`bench.handler`), whose system also sends requests to its
 * `bench.echo` handler through a ThreadmillClient
 * @param spread queues to spread runs over instead of `name` alone: payload i goes to `spread[i mod length]`
 */
export async function threadmillProducer(
  url: string,
  name: string,
  {
    atomicBulk = true,
    task = 'bench.noop',
    spread = [name],
  }: { atomicBulk?: boolean; task?: string; spread?: string[] } = {},
): Promise<Producer> {
  const queues = [...new Set(['bench', 'bench-single', ...spread])];
  const backend = { connection: url, alias: 'bench', queues, resultTtlMs: 0 };
  const queueOf = (d: BenchPayload) => spread[d.id % spread.length]!;
  @Module({ imports: [ThreadmillModule.forRoot(backend)], providers: [BenchTasks] })
  class BenchProducerModule {}
  const app = await NestFactory.createApplicationContext(BenchProducerModule, { logger: ['error'] });
  const queue = app.get(TaskQueue);
  const client = task === 'bench.noop' ? undefined : new ThreadmillClient(backend);
  await client?.connect();
  return {
    enqueue: (data) => queue.enqueue(task, [data], { queue: name }),
    enqueueBulk: (data) =>
      queue.enqueueMany(
        data.map((d) => ({ task, args: [d], queue: queueOf(d) })),
        { atomic: atomicBulk },
      ),
    roundTrip: client && ((data) => firstValueFrom(client.send(BenchEcho, [data]))),
    close: async () => {
      await client?.close();
      await app.close();
    },
  };
}

export async function bullmqProducer(url: string, name: string): Promise<Producer> {
  const { hostname, port } = new URL(url);
  const queue = new Queue<BenchPayload>(name, {
    connection: { host: hostname, port: Number(port) },
    defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
    // BullMQ cannot turn its event stream off; keep it as short as it allows.
    streams: { events: { maxLen: 1 } },
  });
  await queue.waitUntilReady();
  return {
    enqueue: (data) => queue.add('noop', data),
    enqueueBulk: (data) => queue.addBulk(data.map((d) => ({ name: 'noop', data: d }))),
    close: () => queue.close(),
  };
}

export async function beeQueueProducer(url: string, name: string): Promise<Producer> {
  const { hostname, port } = new URL(url);
  const queue = new BeeQueue<BenchPayload>(name, {
    redis: { host: hostname, port: Number(port) },
    isWorker: false,
    getEvents: false,
    sendEvents: false,
    storeJobs: false,
  });
  await queue.ready();
  return {
    enqueue: (data) => queue.createJob(data).save(),
    enqueueBulk: (data) => queue.saveAll(data.map((d) => queue.createJob(d))),
    close: () => queue.close(),
  };
}

export { payload };
