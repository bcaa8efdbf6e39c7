import { bullmqFlowProducer, threadmillFlowProducer, type FlowProducerLink } from './flow-producers.js';
import type { Phase } from './phase.js';
import { beeQueueProducer, bullmqProducer, threadmillProducer, type Producer } from './producers.js';

/** A queue system under test, with the settings its documentation gives for throughput. */
export interface SystemSpec {
  readonly key: string;
  readonly label: string;
  /** Worker entry in benchmarks/workers/. */
  readonly worker: string;
  readonly processes: number;
  readonly concurrency: number;
  /** The phases it runs: a variant of another system runs only the ones it is about. */
  readonly phases: readonly Phase[];
  /** The worker's environment besides the queue, the concurrency and Redis (a variant's settings). */
  readonly env?: Readonly<Record<string, string>>;
  producer(url: string, queue: string): Promise<Producer>;
  /** Its flow API, for a system with a `flow` phase. */
  flowProducer?(url: string, queue: string): Promise<FlowProducerLink>;
}

export const SYSTEMS: readonly SystemSpec[] = [
  {
    key: 'threadmill',
    label: 'Threadmill',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 200,
    phases: ['enqueue', 'bulk', 'drain', 'latency', 'io'],
    // Its bulk API's throughput setting, `atomic: false`: as bee-queue's saveAll, each chunk is stored on its own.
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: false }),
  },
  {
    // What a user who sets only a concurrency gets, as they would with BullMQ:
    // every other setting at its default (results kept, batch, prefetch,
    // the atomic enqueueMany).
    key: 'threadmill-defaults',
    label: 'Threadmill, defaults (concurrency 100)',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 100,
    // Flows at the defaults too: the flow phase's plain runs are this system's, and so its yardstick.
    phases: ['enqueue', 'bulk', 'drain', 'latency', 'io', 'flow'],
    env: { BENCH_DEFAULTS: '1' },
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: true }),
    flowProducer: threadmillFlowProducer,
  },
  {
    // The same with results not kept: what keeping them (the default) costs the drain.
    key: 'threadmill-defaults-no-results',
    label: 'Threadmill, defaults but resultTtlMs 0',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 100,
    phases: ['drain'],
    env: { BENCH_DEFAULTS: '1', BENCH_RESULT_TTL_MS: '0' },
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: true }),
  },
  {
    key: 'bullmq',
    label: 'BullMQ',
    worker: 'bullmq-worker.js',
    processes: 1,
    concurrency: 100,
    phases: ['enqueue', 'bulk', 'drain', 'latency', 'io', 'flow'],
    producer: bullmqProducer,
    flowProducer: bullmqFlowProducer,
  },
  {
    key: 'bee-queue',
    label: 'bee-queue',
    worker: 'beequeue-worker.js',
    processes: 1,
    concurrency: 100,
    phases: ['enqueue', 'bulk', 'drain', 'latency', 'io'],
    producer: beeQueueProducer,
  },
  {
    // The same worker and settings; the runs call a Nest handler (@EventPattern, no pipe) through
    // Nest's pipeline instead of the @Task() method, and requests go to a @MessagePattern.
    key: 'threadmill-handler',
    label: 'Threadmill, Nest handler',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 200,
    phases: ['drain', 'latency', 'roundtrip'],
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: false, task: 'bench.handler' }),
  },
  {
    key: 'threadmill-2p',
    label: 'Threadmill, 2 processes',
    worker: 'threadmill-worker.js',
    processes: 2,
    concurrency: 200,
    phases: ['drain', 'latency'],
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: false }),
  },
  {
    key: 'threadmill-atomic',
    label: 'Threadmill, atomic bulk',
    worker: 'threadmill-worker.js',
    processes: 1,
    concurrency: 200,
    // The default enqueueMany, one script call that stores all or nothing (as BullMQ's addBulk).
    phases: ['enqueue', 'bulk'],
    producer: (url, queue) => threadmillProducer(url, queue, { atomicBulk: true }),
  },
];
