import {
  InvalidEnqueueError,
  TaskBackend,
  TaskInspector,
  TaskStatus,
  type ThreadmillModuleOptions,
} from '@threadmill/nestjs';
import { Cluster } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PartitionedTaskBackend } from '../../libs/threadmill/src/backend/partitioned/partitioned.backend.js';
import {
  PartitionRecord,
  RECORD_EVERY_MS,
  SEEN_WITHIN_MS,
} from '../../libs/threadmill/src/backend/partitioned/partition-record.js';
import { fnv1a } from '../../libs/threadmill/src/backend/partitioned/partition-router.js';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { MathService } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness, type HarnessWorker } from '../support/harness.js';
import { TerminusModule } from '@nestjs/terminus';
import { ThreadmillHealthIndicator, ThreadmillHealthModule } from '@threadmill/nestjs/health';
import { FixtureTasksModule } from '../fixtures/fixture-tasks.js';

type HarnessImports = NonNullable<Parameters<typeof Harness.start>[0]>['imports'];
import { waitUntil } from '../support/wait.js';

/** An application on the run's shared three-master cluster, closed with its own client. */
interface OnCluster {
  readonly app: Harness;
  readonly backend: PartitionedTaskBackend;
  readonly client: Cluster;
}

const started: OnCluster[] = [];

async function onCluster(
  options: ThreadmillModuleOptions,
  worker: HarnessWorker | false = false,
  imports?: HarnessImports,
): Promise<OnCluster> {
  const client = new Cluster(
    inject('redisClusterPorts').map((port) => ({ host: '127.0.0.1', port })),
    { enableOfflineQueue: false },
  );
  const app = await Harness.start({ options: { ...options, connection: client }, worker, ...(imports && { imports }) });
  const subject = { app, client, backend: app.module.get(TaskBackend) as unknown as PartitionedTaskBackend };
  started.push(subject);
  return subject;
}

/** Closes one application now (a process that stops). */
async function closeApp(subject: OnCluster): Promise<void> {
  started.splice(started.indexOf(subject), 1);
  await subject.app.close();
  subject.client.disconnect();
}

afterEach(async () => {
  for (const { app, client } of started.splice(0)) {
    await app.close();
    client.disconnect();
  }
});

/** The master (host:port) that serves each partition's hash tag now. */
async function mastersOf({ backend, client }: OnCluster): Promise<string[]> {
  const ranges = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
  return backend.partitionAliases().map((alias) => {
    const slot = keySlot(alias);
    const [, , [host, port]] = ranges.find(([from, to]) => slot >= from && slot <= to)!;
    return `${host}:${port}`;
  });
}

/** The partitions health check of an application (`ThreadmillHealthModule` imported). */
const health = (at: OnCluster) => at.app.module.get(ThreadmillHealthIndicator).arePartitionsConsistent('partitions');

/** Each partition's share of a queue's concurrency cap. */
const capShares = async ({ backend }: OnCluster, queue: string) =>
  Promise.all(backend.partitions().map(async (p) => (await backend.part(p).concurrencyCaps([queue]))[0]));

const perPartition = async ({ backend }: OnCluster, queue: string) =>
  Promise.all(backend.partitions().map(async (p) => (await backend.part(p).counts([queue]))[0]!));

describe('partitions on a three-master Redis Cluster', () => {
  it('spreads one queue over three partitions on three masters, and serves it as one queue', async () => {
    const alias = uniqueAlias('parts');
    const producer = await onCluster({ alias, partitions: 3 });
    expect(new Set(await mastersOf(producer)).size).toBe(3);
    const runs = await producer.app.queue.enqueueMany(
      Array.from({ length: 60 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 1] })),
    );
    // Round-robin: each partition holds a third, each on its own master.
    expect((await perPartition(producer, 'default')).map((counts) => counts.ready)).toEqual([20, 20, 20]);
    const inspector = producer.app.module.get(TaskInspector);
    expect((await inspector.counts(['default']))[0]).toMatchObject({ ready: 60 });
    expect(await inspector.list('default', 'ready', { limit: 100 })).toHaveLength(60);

    await onCluster({ alias, partitions: 3 }, { concurrency: 8 });
    const results = await Promise.all(runs.map((run) => producer.app.queue.waitFor(run.id, { timeoutMs: 20_000 })));
    expect(results.map((result) => result.returnValue)).toEqual(runs.map((_, i) => i + 1));
    expect((await inspector.counts(['default']))[0]).toMatchObject({ ready: 0, running: 0, successful: 60 });
    expect((await producer.backend.stats('default'))['succeeded']).toBe(60);
    const minutes = (await producer.backend.metrics('default', 2)).minutes;
    expect(minutes.reduce((total, minute) => total + minute.succeeded, 0)).toBe(60);
  });

  it('keeps the runs of one partition key in one partition, in priority then FIFO order', async () => {
    const app = await onCluster({ alias: uniqueAlias('keyed'), partitions: 3 });
    const enqueue = (i: number, priority = 0) =>
      app.app.queue.enqueue(MathService, 'add', [i, 0], { partitionKey: 'customer-7', priority });
    const ids = [(await enqueue(1)).id, (await enqueue(2)).id, (await enqueue(3, 5)).id, (await enqueue(4)).id];
    const homes = new Set(ids.map((id) => app.backend.partitionOfRun(id)));
    expect(homes.size).toBe(1);
    const claimed = await app.backend.claim(['default'], 10, 'host:1:0', 0);
    expect(claimed.map((run) => run.id)).toEqual([ids[2], ids[0], ids[1], ids[3]]);
  });

  it('gets, cancels, dequeues and waits for runs wherever they are, by id alone', async () => {
    const app = await onCluster({ alias: uniqueAlias('byid'), partitions: 3 });
    const runs = await app.app.queue.enqueueMany(
      Array.from({ length: 6 }, (_, i) => ({ task: MathService, method: 'add', args: [i, i] })),
    );
    expect(new Set(runs.map((run) => app.backend.partitionOfRun(run.id))).size).toBe(3);
    const results = await app.app.queue.getResults([...runs.map((run) => run.id), 'nobody']);
    expect(results.map((result) => result?.status ?? null)).toEqual([...runs.map(() => TaskStatus.READY), null]);
    const inspector = app.app.module.get(TaskInspector);
    const waiting = runs.slice(0, 3).map((run) => app.app.queue.waitFor(run.id, { timeoutMs: 10_000 }));
    for (const run of runs.slice(0, 3)) await app.app.queue.cancel(run.id);
    expect((await Promise.all(waiting)).map((result) => result.status)).toEqual(
      runs.slice(0, 3).map(() => 'CANCELLED'),
    );
    await inspector.dequeue(runs[3]!.id);
    expect((await inspector.counts(['default']))[0]).toMatchObject({ ready: 2, cancelled: 3 });
    expect(await inspector.purge('default')).toBe(5);
  });

  it('stores every run of a limit group in one partition, where its limit holds, and refuses what would split one', async () => {
    const producer = await onCluster({ alias: uniqueAlias('parts-groups'), partitions: 3 });
    const { queue } = producer.app;
    const runs = [];
    for (const customer of ['acme', 'globex', 'initech']) {
      for (let n = 0; n < 4; n++) runs.push(await queue.enqueue('LimitedService.onePerCustomer', [customer, n]));
    }
    // Each customer's runs share the partition its id names, as the group's hash routes it.
    const partitionOf = (id: string) => producer.backend.partitionOfRun(id);
    for (let c = 0; c < 3; c++) {
      expect(new Set(runs.slice(c * 4, c * 4 + 4).map((run) => partitionOf(run.id))).size).toBe(1);
    }
    // One of each customer at once, across every partition: the per-key cap of 1 holds.
    const leased = await producer.backend.claim(['default'], 100, 'host:1:0', 0);
    expect(leased.map((run) => JSON.parse(run.payload)[1][0]).sort()).toEqual(['acme', 'globex', 'initech']);
    // A partition key would route a group's runs apart: refused, nothing stored.
    await expect(
      queue.enqueue('LimitedService.onePerCustomer', ['acme', 9], { partitionKey: 'elsewhere' }),
    ).rejects.toThrow(/partitionKey cannot be given to a task with a limit/);
    // So would a caller's id that routes elsewhere than the group (some of these do, on three partitions).
    const ids = Array.from({ length: 12 }, (_, i) => `order-${i}`);
    const outcomes = await Promise.allSettled(
      ids.map((id) => queue.enqueue('LimitedService.onePerCustomer', ['acme', 1], { id })),
    );
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((outcome) => outcome.reason instanceof InvalidEnqueueError)).toBe(true);
    expect((await queue.getResults(ids)).filter((result) => result !== null)).toHaveLength(12 - refused.length);
  });

  it('splits a concurrency cap over the partitions, never exceeding it, and refuses one below the partition count', async () => {
    const app = await onCluster({ alias: uniqueAlias('capped'), partitions: 3 });
    const inspector = app.app.module.get(TaskInspector);
    await inspector.setConcurrencyCap('reports', 4);
    expect(
      await Promise.all(app.backend.partitions().map((p) => app.backend.part(p).concurrencyCaps(['reports']))),
    ).toEqual([[2], [1], [1]]);
    expect(await inspector.concurrencyCap('reports')).toBe(4);
    await app.app.queue.enqueueMany(
      Array.from({ length: 30 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 0], queue: 'reports' })),
    );
    const leased = await app.backend.claim(['reports'], 30, 'host:1:0', 0);
    expect(leased.length).toBeLessThanOrEqual(4);
    expect(leased.length).toBeGreaterThan(0);
    await expect(inspector.setConcurrencyCap('reports', 2)).rejects.toThrow(/below the backend's 3 partitions/);
    const limit = { max: 9, perMs: 1_000 };
    await inspector.setRateLimit('emails', limit);
    expect(await inspector.rateLimit('emails')).toMatchObject(limit);
  });

  it('grows from 2 to 4 partitions with runs stored: the mismatch is reported, every run is served and found', async () => {
    const alias = uniqueAlias('grow');
    const small = await onCluster({ alias, partitions: 2, concurrencyCaps: { reports: 8 } });
    const generated = await small.app.queue.enqueueMany(
      Array.from({ length: 20 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 0] })),
    );
    const chosen = await small.app.queue.enqueueMany(
      Array.from({ length: 10 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 100], id: `order-${i}` })),
    );
    const large = await onCluster({ alias, partitions: 4 }, { concurrency: 8 });
    expect(large.backend.partitionView()).toMatchObject({ partitions: 4, span: 4, others: [{ partitions: 2 }] });
    await small.backend.refresh();
    expect(small.app.module.get(TaskInspector).partitions()).toMatchObject({
      partitions: 2,
      span: 4,
      others: [{ partitions: 4 }],
    });
    // The cap written over 2 partitions is spread over 4.
    expect(await large.backend.concurrencyCaps(['reports'])).toEqual([8]);
    expect(
      await Promise.all(large.backend.partitions().map((p) => large.backend.part(p).concurrencyCaps(['reports']))),
    ).toEqual([[2], [2], [2], [2]]);
    for (const run of [...generated, ...chosen]) {
      const result = await large.app.waitFor(run.id);
      expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    }
    // Caller ids stored by the 2-partition process are found by the 4-partition one, by id alone.
    expect((await large.app.queue.getResult('order-3')).returnValue).toBe(103);
    expect((await large.app.queue.waitFor('order-7', { timeoutMs: 5_000 })).returnValue).toBe(107);
    const record = new PartitionRecord(large.client, `threadmill:{${alias}}:partition-counts`, Date.now);
    expect((await record.read()).map((entry) => entry.partitions)).toEqual([4, 2]);
  });

  it('keeps a queue paused in the partitions a growth adds, and resumes it in all of them', async () => {
    const alias = uniqueAlias('grow-paused');
    const small = await onCluster({ alias, partitions: 2 });
    await small.app.module.get(TaskInspector).pause('default');
    const large = await onCluster({ alias, partitions: 4 });
    const pausedIn = async () =>
      Promise.all(
        large.backend.partitions().map(async (p) => (await large.backend.part(p).pausedSince(['default']))[0]),
      );
    expect((await pausedIn()).map((at) => at !== null)).toEqual([true, true, true, true]);
    // Round-robin over four partitions: two runs in each, none claimed while the queue is paused.
    const runs = await large.app.queue.enqueueMany(
      Array.from({ length: 8 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 1] })),
    );
    expect(new Set(runs.map((run) => large.backend.partitionOfRun(run.id))).size).toBe(4);
    expect(await large.backend.claim(['default'], 10, 'grow-paused-worker', 0)).toEqual([]);
    await large.app.module.get(TaskInspector).resume('default');
    expect((await pausedIn()).every((at) => at === null)).toBe(true);
    const claimed = await large.backend.claim(['default'], 10, 'grow-paused-worker', 0);
    expect(claimed.map((run) => run.id).sort()).toEqual(runs.map((run) => run.id).sort());
  });

  it('drops retired partitions from the record once drained after a shrink: the span shrinks in every process, results stay readable until then, nothing is lost', async () => {
    const alias = uniqueAlias('shrink');
    const options = { alias, resultTtlMs: 2_000, concurrencyCaps: { reports: 8 } };
    const large = await onCluster({ ...options, partitions: 4 });
    const runs = await large.app.queue.enqueueMany(
      Array.from({ length: 40 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 0] })),
    );
    // A deferred run in partition 3 holds the retirement until it ran and its result expired.
    const key = Array.from({ length: 40 }, (_, i) => `late-${i}`).find((k) => fnv1a(k) % 4 === 3)!;
    const late = await large.app.queue.enqueue(MathService, 'add', [100, 0], { partitionKey: key, delayMs: 1_500 });
    expect(new Set(runs.map((run) => large.backend.partitionOfRun(run.id)))).toEqual(new Set([0, 1, 2, 3]));
    await closeApp(large);

    const small = await onCluster({ ...options, partitions: 2 }, { concurrency: 8 });
    const producer = await onCluster({ ...options, partitions: 2 });
    expect([small.backend.span, producer.backend.span]).toEqual([4, 4]);
    // No process with 4 partitions recorded itself for over a minute (the record is set as a minute would leave it).
    const record = new PartitionRecord(small.client, `threadmill:{${alias}}:partition-counts`, Date.now);
    await small.client.zadd(`threadmill:{${alias}}:partition-counts`, Date.now() - SEEN_WITHIN_MS - 1_000, '4');
    const ids = [...runs, late].map((run) => run.id);
    const results = await Promise.all(ids.map((id) => producer.app.queue.waitFor(id, { timeoutMs: 10_000 })));
    expect(results.map((result) => result.returnValue)).toEqual([...runs.map((_, i) => i), 100]);
    // Drained of work, but their results are kept: the record keeps 4, and every result is read.
    await small.backend.refresh();
    expect(small.backend.span).toBe(4);
    expect((await producer.app.queue.getResults(ids)).map((result) => result?.status)).toEqual(
      ids.map(() => TaskStatus.SUCCESSFUL),
    );
    // Once trimmed, partitions 2 and 3 are dropped: at the refresh of the first process to look, and within a
    // refresh (every 15 s) in every other.
    await waitUntil(
      'the retired partitions are dropped',
      async () => {
        await small.backend.refresh();
        return small.backend.span === 2;
      },
      10_000,
    );
    const droppedAt = Date.now();
    expect((await record.read()).map((entry) => entry.partitions)).toEqual([2]);
    await waitUntil('the producer drops them too', () => producer.backend.span === 2, RECORD_EVERY_MS + 2_000);
    console.log(`partition retirement: the producer's span shrank ${Date.now() - droppedAt} ms after the drop`);
    expect(small.backend.partitions()).toEqual([0, 1]);
    // The cap's shares of the dropped partitions moved to those that stay: the queue keeps its cap.
    expect(await capShares(small, 'reports')).toEqual([4, 4]);
    expect(await producer.backend.concurrencyCaps(['reports'])).toEqual([8]);

    // A run stored in a dropped partition by a process that had not yet seen it leave is found by a process that
    // saw it leave, which brings the count back: it is consumed, and retired again.
    const stray = `${ids[0]!.slice(0, 24)}03`;
    const payload = JSON.stringify(['MathService.add', [40, 2]]);
    await small.backend
      .part(3)
      .store([
        { id: stray, queue: 'default', priority: 0, runAt: 0, delayMs: 0, leaseTtlMs: 0, payload, idempotent: true },
      ]);
    await small.backend.refresh();
    expect(small.backend.span).toBe(4);
    expect(small.backend.partitionView().others).toEqual([]);
    expect((await small.app.queue.waitFor(stray, { timeoutMs: 10_000 })).returnValue).toBe(42);
    await producer.backend.refresh();
    expect((await producer.app.queue.getResult(stray)).returnValue).toBe(42);

    // A process with 4 partitions booting again records its count: every process grows its span back.
    const again = await onCluster({ ...options, partitions: 4 });
    await producer.backend.refresh();
    expect([again.backend.span, producer.backend.span]).toEqual([4, 4]);
    expect(await capShares(again, 'reports')).toEqual([2, 2, 2, 2]);
  });

  it('makes the partitions health check down in every process while their counts differ', async () => {
    const alias = uniqueAlias('parts-health');
    const withHealth = [FixtureTasksModule, TerminusModule.forRoot({ logger: false }), ThreadmillHealthModule];
    const first = await onCluster({ alias, partitions: 2 }, false, withHealth);
    expect(health(first)).toEqual({ partitions: { status: 'up', partitions: 2, span: 2 } });
    const second = await onCluster({ alias, partitions: 3 }, false, withHealth);
    // The second sees the first's count at boot; the first at its next refresh (every 15 s, here at once).
    await first.backend.refresh();
    for (const [at, mine, other] of [
      [second, 3, 2],
      [first, 2, 3],
    ] as const) {
      expect(health(at)).toEqual({
        partitions: {
          status: 'down',
          partitions: mine,
          span: 3,
          others: [other],
          message: expect.stringMatching(/Give every process the same partitions option/),
        },
      });
    }
  });

  it('wakes an idle consumer for a run enqueued to any partition', async () => {
    const alias = uniqueAlias('idle');
    const worker = await onCluster({ alias, partitions: 3 }, { concurrency: 2 });
    const producer = await onCluster({ alias, partitions: 3 });
    await waitUntil('the consumer blocks', async () => (await worker.backend.workers()).length === 1);
    for (let i = 0; i < 6; i++) {
      const run = await producer.app.queue.enqueue(MathService, 'add', [i, 1]);
      const sentAt = Date.now();
      // Well within the idle wait (a third of the 30 s lease): woken, not timed out.
      expect((await producer.app.queue.waitFor(run.id, { timeoutMs: 8_000 })).returnValue).toBe(i + 1);
      expect(Date.now() - sentAt).toBeLessThan(5_000);
    }
  });
});
