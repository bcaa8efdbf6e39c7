import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Task, TaskQueue, ThreadmillModule, type FlowNodeSpec } from '@threadmill/nestjs';
import { FlowProducer, Queue } from 'bullmq';
import type { BenchPayload } from '../workers/protocol.js';

/** How a benchmark enqueues flows into one system: a parent that waits for its children. */
export interface FlowProducerLink {
  /** One flow, in one call of the system's flow API: `parent` runs once every one of `children` has. */
  enqueueFlow(parent: BenchPayload, children: readonly BenchPayload[]): Promise<unknown>;
  close(): Promise<void>;
}

@Injectable()
class FlowBenchTasks {
  /** Declared for the producer's registry; the benchmark worker runs it. */
  @Task({ name: 'bench.noop', queue: 'bench' })
  noop(_payload: BenchPayload): void {}
}

/**
 * Threadmill's `enqueueFlow`: the children are the flow's roots, the parent a
 * node `after` every one of them (each edge at its default, `onFailure: 'fail'`).
 * The module at its defaults, as the `threadmill-defaults` system's producer.
 */
export async function threadmillFlowProducer(url: string, queue: string): Promise<FlowProducerLink> {
  @Module({
    imports: [ThreadmillModule.forRoot({ connection: url, alias: 'bench', queues: [...new Set(['bench', queue])] })],
    providers: [FlowBenchTasks],
  })
  class FlowProducerModule {}
  const app = await NestFactory.createApplicationContext(FlowProducerModule, { logger: ['error'] });
  const tasks = app.get(TaskQueue);
  return {
    enqueueFlow: (parent, children) => {
      const nodes: Record<string, FlowNodeSpec> = {};
      children.forEach((child, i) => (nodes[`c${i}`] = { task: 'bench.noop', args: [child], queue }));
      nodes['parent'] = { task: 'bench.noop', args: [parent], queue, after: Object.keys(nodes) };
      return tasks.enqueueFlow({ nodes });
    },
    close: () => app.close(),
  };
}

/**
 * BullMQ's `FlowProducer.add`: the parent job with its children, every job on
 * `queue`, with the settings of the `bullmq` system's producer (jobs removed
 * once they end, the event stream at its shortest: the queue's meta that a
 * `Queue` writes, which BullMQ's scripts read).
 */
export async function bullmqFlowProducer(url: string, queue: string): Promise<FlowProducerLink> {
  const { hostname, port } = new URL(url);
  const connection = { host: hostname, port: Number(port) };
  const meta = new Queue(queue, { connection, streams: { events: { maxLen: 1 } } });
  await meta.waitUntilReady();
  const flows = new FlowProducer({ connection });
  await flows.waitUntilReady();
  const opts = { removeOnComplete: true, removeOnFail: true };
  return {
    enqueueFlow: (parent, children) =>
      flows.add({
        name: 'noop',
        queueName: queue,
        data: parent,
        opts,
        children: children.map((child) => ({ name: 'noop', queueName: queue, data: child, opts })),
      }),
    close: async () => {
      await flows.close();
      await meta.close();
    },
  };
}
