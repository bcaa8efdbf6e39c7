import { beeQueueProducer, bullmqProducer, threadmillProducer, type Producer } from './producers.js';

/** A queue system under test, with the settings its documentation gives for throughput. */
export interface SystemSpec {
  readonly key: string;
  readonly label: string;
  /** Worker entry in benchmarks/workers/. */
  readonly worker: string;
  readonly processes: number;
  readonly concurrency: number;
  /** Only the drain and latency phases (a variant of another system). */
  readonly drainOnly: boolean;
  producer(url: string, queue: string): Promise<Producer>;
}

export const SYSTEMS: readonly SystemSpec[] = [
  {
    key: 'threadmill',
    label: 'Threadmill',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 200,
    drainOnly: false,
    producer: threadmillProducer,
  },
  {
    key: 'bullmq',
    label: 'BullMQ',
    worker: 'bullmq-worker.js',
    processes: 1,
    concurrency: 100,
    drainOnly: false,
    producer: bullmqProducer,
  },
  {
    key: 'bee-queue',
    label: 'bee-queue',
    worker: 'beequeue-worker.js',
    processes: 1,
    concurrency: 100,
    drainOnly: false,
    producer: beeQueueProducer,
  },
  {
    key: 'threadmill-2p',
    label: 'Threadmill, 2 processes',
    worker: 'threadmill-worker.js',
    processes: 2,
    concurrency: 200,
    drainOnly: true,
    producer: threadmillProducer,
  },
];
