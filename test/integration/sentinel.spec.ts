import { TaskInspector, TaskStatus, createInspector } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { SENTINEL_MASTER, SentinelRedis } from '../support/redis-sentinel.js';
import { WorkerProcess } from '../support/worker-process.js';

const CONFIRM = { replicas: 1, timeoutMs: 1_000 };

describe('a connection through Redis Sentinel (a primary, a replica, three sentinels)', () => {
  let redis: SentinelRedis;
  const alias = uniqueAlias('sentinel');
  let producer: Harness;
  let worker: Harness;

  beforeAll(async () => {
    redis = await SentinelRedis.start();
    const options = { alias, connection: redis.connection(), confirmEnqueues: CONFIRM, brokerIntervalMs: 100 };
    producer = await Harness.start({ options });
    worker = await Harness.start({ options, worker: { concurrency: 4, queues: ['default'] } });
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
    await producer?.close();
    await redis?.stop();
  });

  it('enqueues confirmed, runs, waits for results and counts them on the primary the sentinels name', async () => {
    const runs = await producer.queue.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
    );
    const one = await producer.queue.enqueue(MathService, 'add', [40, 2]);
    // waitFor: the producer's waiter reads the finished feed on a blocking connection of its own.
    expect((await producer.queue.waitFor(one.id, { timeoutMs: 15_000 })).returnValue).toBe(42);
    const results = await Promise.all(runs.map((run) => producer.queue.waitFor(run.id, { timeoutMs: 15_000 })));
    expect(results.map((result) => result.returnValue)).toEqual(runs.map((_, i) => i + 1));
    expect((await producer.module.get(TaskInspector).counts(['default']))[0]!.successful).toBe(21);
  });

  it('serves a standalone inspector, which names the sentinels and the monitored primary, not a host it does not use', async () => {
    const standalone = await createInspector({ connection: redis.connection(), alias });
    try {
      expect((await standalone.inspector.counts(['default']))[0]!.successful).toBeGreaterThanOrEqual(21);
      expect(standalone.describe).toBe(
        `Redis Sentinel ${SENTINEL_MASTER} via ${redis.sentinelPorts
          .split(',')
          .map((port) => `127.0.0.1:${port}`)
          .join(',')}`,
      );
    } finally {
      await standalone.close();
    }
  });

  it('serves a worker process configured with the sentinels', async () => {
    const pool = WorkerProcess.start(alias, ['--workers', '1', '--concurrency', '2', '--queues', 'emails'], {
      REDIS_SENTINEL_PORTS: redis.sentinelPorts,
      REDIS_SENTINEL_NAME: SENTINEL_MASTER,
    });
    try {
      // The in-process worker consumes 'default' only: the runs of 'emails' are the worker process's.
      const runs = await producer.queue.enqueueMany(
        Array.from({ length: 10 }, (_, i) => ({ task: 'MathService.add', args: [i, 100], queue: 'emails' })),
      );
      const results = await Promise.all(runs.map((run) => producer.queue.waitFor(run.id, { timeoutMs: 30_000 })));
      expect(results.every((result) => result.status === TaskStatus.SUCCESSFUL)).toBe(true);
    } finally {
      await pool.stop();
    }
  });
});
