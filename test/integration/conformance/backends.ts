import { Test, type TestingModule } from '@nestjs/testing';
import { TaskBackend, TaskInspector, TaskQueue, TaskScheduler, type ThreadmillModuleOptions } from '@threadmill/nestjs';
import { TaskRegistry } from '../../../libs/threadmill/src/task/task.registry.js';
import { ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { FIXTURE_QUEUES, FixtureTasksModule } from '../../fixtures/fixture-tasks.js';
import { Cluster } from 'ioredis';
import { inject } from 'vitest';
import { Harness } from '../../support/harness.js';

/** One application under test, on one backend. */
export interface Subject {
  readonly queue: TaskQueue;
  readonly inspector: TaskInspector;
  readonly scheduler: TaskScheduler;
  readonly backend: TaskBackend;
  readonly registry: TaskRegistry;
  /** The Redis keyspace's alias, for a second application on the same keys (none in memory). */
  readonly alias?: string;
  close(): Promise<void>;
}

/**
 * A backend the conformance suite runs against: a producer only (runs stay
 * where they were stored), or a producer whose runs are executed (a worker
 * on Redis, immediate mode in memory).
 */
export interface ConformanceBackend {
  readonly name: string;
  /** Whether `memory()` reports the store's memory (Redis), or no figure (process memory is not the store's). */
  readonly measuresMemory: boolean;
  producer(options?: ThreadmillModuleOptions): Promise<Subject>;
  executing(options?: ThreadmillModuleOptions): Promise<Subject>;
}

const fromHarness = (harness: Harness): Subject => ({
  queue: harness.queue,
  inspector: harness.module.get(TaskInspector),
  scheduler: harness.module.get(TaskScheduler),
  backend: harness.backend,
  registry: harness.module.get(TaskRegistry),
  alias: harness.alias,
  close: () => harness.close(),
});

const fromModule = (module: TestingModule): Subject => ({
  queue: module.get(TaskQueue),
  inspector: module.get(TaskInspector),
  scheduler: module.get(TaskScheduler),
  backend: module.get(TaskBackend),
  registry: module.get(TaskRegistry),
  close: () => module.close(),
});

async function inMemory(mode: 'manual' | 'immediate', options: ThreadmillModuleOptions): Promise<Subject> {
  const module = await Test.createTestingModule({
    imports: [ThreadmillTestingModule.forRoot({ queues: FIXTURE_QUEUES, ...options, mode }), FixtureTasksModule],
  }).compile();
  module.useLogger(['error']);
  await module.init();
  return fromModule(module);
}

/** A Redis backend on the run's shared three-master Redis Cluster (global setup), closed with its client. */
async function onCluster(options: ThreadmillModuleOptions, worker: boolean): Promise<Subject> {
  const client = new Cluster(
    inject('redisClusterPorts').map((port) => ({ host: '127.0.0.1', port })),
    { enableOfflineQueue: false },
  );
  const harness = await Harness.start({
    options: { ...options, connection: client },
    ...(worker ? { worker: { concurrency: 4 } } : {}),
  }).catch((error: unknown) => {
    client.disconnect();
    throw error;
  });
  const subject = fromHarness(harness);
  return {
    ...subject,
    close: async () => {
      await subject.close();
      client.disconnect();
    },
  };
}

/**
 * Every backend, a partitioned one (three hash tags of the cluster) included.
 * Where a test's runs must keep one order, they share a `partitionKey`
 * (every backend accepts it; one of one partition ignores it).
 */
export const BACKENDS: readonly ConformanceBackend[] = [
  {
    name: 'redis',
    measuresMemory: true,
    producer: async (options = {}) => fromHarness(await Harness.start({ options })),
    executing: async (options = {}) => fromHarness(await Harness.start({ options, worker: { concurrency: 4 } })),
  },
  {
    name: 'redis-cluster',
    measuresMemory: true,
    producer: (options = {}) => onCluster(options, false),
    executing: (options = {}) => onCluster(options, true),
  },
  {
    // One logical queue over three partitions (one hash tag each) of the cluster.
    name: 'redis-cluster-partitioned',
    measuresMemory: true,
    producer: (options = {}) => onCluster({ partitions: 3, ...options }, false),
    executing: (options = {}) => onCluster({ partitions: 3, ...options }, true),
  },
  {
    name: 'in-memory',
    measuresMemory: false,
    producer: (options = {}) => inMemory('manual', options),
    executing: (options = {}) => inMemory('immediate', options),
  },
];

/**
 * The backends of one keyspace: a partitioned backend splits each queue's
 * concurrency cap and rate limit over its partitions (docs/scale-out.md),
 * which test/integration/partitions.spec.ts covers.
 */
export const UNPARTITIONED_BACKENDS = BACKENDS.filter((backend) => backend.name !== 'redis-cluster-partitioned');
