import { TaskInspector, TaskStatus } from '@threadmill/nestjs';
import type { Cluster } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoService, FailService, MathService, PolicyService, SlowService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { RedisCluster } from '../support/redis-cluster.js';

describe('Redis Cluster (3 masters on loopback)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  let app: Harness;
  const alias = uniqueAlias('cluster');

  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
    client = cluster.client();
    app = await Harness.start({
      options: { alias, connection: client, leaseTtlMs: 600, brokerIntervalMs: 100 },
      // 'reports' is left to the test, to hold a lease nobody renews.
      worker: { concurrency: 4, queues: ['default', 'emails'] },
    });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    client?.disconnect();
    await cluster?.stop();
  });

  it('enqueues, claims, acknowledges and reads results with no CROSSSLOT error', async () => {
    const typed = await app.queue.enqueue(MathService, 'add', [20, 22]);
    const many = await app.queue.enqueueMany([
      { task: 'math.multiply', args: [6, 7], queue: 'default' },
      { task: EchoService, method: 'echo', args: [{ when: new Date(0) }] },
    ]);
    const results = await Promise.all([typed, ...many].map((r) => app.waitFor(r.id)));
    expect(results.map((r) => r.returnValue)).toEqual([42, 42, { when: new Date(0) }]);
    expect((await app.queue.getResults([typed.id, 'missing'])).map((r) => r?.status ?? null)).toEqual([
      TaskStatus.SUCCESSFUL,
      null,
    ]);
    const counts = await app.queue.counts();
    expect(counts.find((c) => c.queue === 'default')!.successful).toBeGreaterThanOrEqual(2);
    expect((await app.backend.workers()).length).toBe(1);
  });

  it('retries with backoff through deferral and promotion', async () => {
    const run = await app.queue.enqueue(FailService, 'flaky', [2]);
    expect(await app.waitFor(run.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 3 });
  });

  it('reaps an expired lease and quarantines, lists and requeues', async () => {
    const { id } = await app.queue.enqueue(SlowService, 'stubborn', [1]);
    expect((await app.waitFor(id)).status).toBe(TaskStatus.SUCCESSFUL);
    // A started attempt's lease nobody renews: the reaper hands the run to its policy.
    const orphan = await app.queue.enqueue(MathService, 'add', [1, 1], { queue: 'reports' });
    const [leased] = await app.backend.claim(['reports'], 1, 'ghost:1:0', 0);
    expect(leased!.id).toBe(orphan.id);
    expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
    const reaped = await app.waitFor(orphan.id, (r) => r.status === TaskStatus.FAILED, 5_000);
    expect(reaped.errors[0]!.errorClass).toBe('AcknowledgementTimeoutError');

    const broken = await app.queue.enqueue(PolicyService, 'withBrokenPolicy', []);
    await app.waitFor(broken.id, (r) => r.status === TaskStatus.QUARANTINED);
    const inspector = app.module.get(TaskInspector);
    expect((await inspector.quarantined('default')).map((r) => r.id)).toContain(broken.id);
    const requeued = await inspector.requeue(broken.id);
    // A worker may claim it at once: it is no longer quarantined either way.
    expect([TaskStatus.READY, TaskStatus.RUNNING, TaskStatus.QUARANTINED]).toContain(requeued.status);
    expect(requeued.attempts).toBeGreaterThanOrEqual(1);
    await app.waitFor(broken.id, (r) => r.status === TaskStatus.QUARANTINED && r.attempts === 2);
  });

  it('keeps working while its slot moves to another master (MOVED)', async () => {
    const slot = Number(await client.cluster('KEYSLOT', `{${alias}}`));
    const before = await cluster.owner(slot);
    const target = cluster.nodes.find((node) => node !== before)!;
    const first = await app.queue.enqueueMany(
      Array.from({ length: 50 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })),
    );
    await cluster.migrate(slot, target);
    expect((await cluster.owner(slot)).port).toBe(target.port);
    await delay(100);
    const second = await app.queue.enqueueMany(
      Array.from({ length: 50 }, (_, i) => ({ task: 'MathService.add', args: [i, 2] })),
    );
    const done = await Promise.all([...first, ...second].map((r) => app.waitFor(r.id, undefined, 20_000)));
    expect(done.every((r) => r.status === TaskStatus.SUCCESSFUL)).toBe(true);
    expect(done.map((r) => r.returnValue)).toEqual([
      ...Array.from({ length: 50 }, (_, i) => i + 1),
      ...Array.from({ length: 50 }, (_, i) => i + 2),
    ]);
  });
});
