import { AcknowledgementTimeoutError, TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeasedRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const LEASE_MS = 300;
const WORKER = 'host:1:0';
const SUCCESS = { kind: 'successful', returnValue: undefined } as const;

/** An enqueueMany item of priority `priority`. */
const item = (tag: number, priority: number) => ({ task: 'MathService.add', args: [tag, 0], priority });

/** The idle registrations of `queue`. */
const idle = (app: Harness, queue: string) =>
  app.backend.connections.client.zrange(app.backend.keys.idle(queue), '0', '-1');

/**
 * An enqueue into an empty queue hands the run to a consumer whose last claim
 * came back short, leased, through its blocked wait: one round trip fewer
 * than waking it up to claim. These tests hold the durability rules of that
 * path: nothing handed over is lost, whoever holds it.
 */
describe('direct delivery to idle consumers', () => {
  const apps: Harness[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(worker: false | { queues: string[] } = false): Promise<Harness> {
    const app = await Harness.start({ options: { leaseTtlMs: LEASE_MS }, worker });
    apps.push(app);
    return app;
  }

  it('hands a run enqueued into an empty queue to the registered consumer, leased, through its work signal', async () => {
    const app = await start();
    expect(await app.backend.claim(['default'], 5, WORKER, 0, { idle: true })).toEqual([]);
    expect(await idle(app, 'default')).toHaveLength(1);

    const signal = app.backend.workSignal(['default'], WORKER);
    try {
      const woken = signal.wait(5_000);
      const { id } = await app.queue.enqueue(MathService, 'add', [2, 3]);
      const handed = (await woken) as LeasedRun;
      expect(typeof handed).toBe('object');
      expect([handed.id, handed.queue, handed.attempts, handed.deadline - handed.claimedAt]).toEqual([
        id,
        'default',
        1,
        LEASE_MS,
      ]);
      expect(JSON.parse(handed.payload)).toMatchObject({ task: 'MathService.add', args: [2, 3] });
      expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 0, running: 1 });
      expect((await app.queue.getResult(id)).status).toBe(TaskStatus.RUNNING);
      expect(await idle(app, 'default')).toEqual([]); // one delivery per registration

      expect(await app.backend.acknowledge([{ id, queue: 'default', token: handed.token, outcome: SUCCESS }])).toEqual([
        true,
      ]);
      expect((await app.queue.getResult(id)).status).toBe(TaskStatus.SUCCESSFUL);
    } finally {
      await signal.close();
    }
  });

  it("hands over a call's first run in ready order, from the ready set or the ready list", async () => {
    const app = await start();
    const inboxed = () => app.backend.connections.client.zcard(app.backend.keys.inbox(WORKER));
    // Priority 5 goes to the ready set, priority 0 to the ready list: the set's run is first.
    await app.backend.claim(['default'], 5, WORKER, 0, { idle: true });
    const urgent = await app.queue.enqueueMany([item(1, 0), item(2, 5), item(3, 0)]);
    expect(await inboxed()).toBe(1);
    expect((await app.backend.claim(['default'], 5, WORKER, 0, { idle: true })).map((run) => run.id)).toEqual(
      [urgent[1], urgent[0], urgent[2]].map((run) => run!.id),
    );
    // Priority -3 scores after the list's first run, which is handed over.
    const plain = await app.queue.enqueueMany([item(4, -3), item(5, 0)]);
    expect(await inboxed()).toBe(1);
    expect((await app.backend.claim(['default'], 5, WORKER, 0)).map((run) => run.id)).toEqual(
      [plain[1], plain[0]].map((run) => run!.id),
    );
  });

  it('gives the next claim what was handed over, first, and withdraws the consumer from all its queues', async () => {
    const app = await start();
    await app.backend.claim(['default', 'emails'], 5, WORKER, 0, { idle: true });
    expect([await idle(app, 'default'), await idle(app, 'emails')].map((set) => set.length)).toEqual([1, 1]);

    const handed = await app.queue.enqueue(MathService, 'add', [1, 1], { queue: 'emails' });
    // Busy now: a second enqueue is not handed over, it waits in READY.
    const waiting = await app.queue.enqueue(MathService, 'add', [1, 2]);
    expect([await idle(app, 'default'), await idle(app, 'emails')]).toEqual([[], []]);
    expect(await app.queue.counts(['default', 'emails'])).toEqual([
      expect.objectContaining({ ready: 1, running: 0 }),
      expect.objectContaining({ ready: 0, running: 1 }),
    ]);

    const claimed = await app.backend.claim(['default', 'emails'], 5, WORKER, 0);
    expect(claimed.map((run) => run.id)).toEqual([handed.id, waiting.id]);
    const inbox = app.backend.keys.inbox(WORKER);
    expect(await app.backend.connections.client.exists(inbox)).toBe(0);
    const applied = await app.backend.acknowledge(
      claimed.map((run) => ({ id: run.id, queue: run.queue, token: run.token, outcome: SUCCESS })),
    );
    expect(applied).toEqual([true, true]);
  });

  it('hands nothing over while the queue holds ready runs, for a deferred run, or to a stale registration', async () => {
    const app = await start();
    const client = app.backend.connections.client;
    await app.backend.claim(['default'], 5, WORKER, 0, { idle: true });
    const [registration] = await idle(app, 'default');

    await app.queue.enqueue(MathService, 'add', [1, 1], { delayMs: 60_000 });
    expect(await idle(app, 'default')).toEqual([registration]);

    // Registered 60 s ago: its consumer would have renewed it by now.
    await client.zadd(app.backend.keys.idle('default'), Date.now() - 60_000, registration!);
    await app.queue.enqueue(MathService, 'add', [1, 2]);
    expect(await idle(app, 'default')).toEqual([]);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 1, running: 0, deferred: 1 });

    // A fresh registration, but the queue is not empty: first come, first served.
    await client.zadd(app.backend.keys.idle('default'), Date.now(), registration!);
    await app.queue.enqueue(MathService, 'add', [1, 3]);
    expect(await idle(app, 'default')).toEqual([registration]);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ ready: 2, running: 0 });
  });

  it('recovers a run handed to a consumer that died before taking it: its lease expires and the reaper settles it', async () => {
    const app = await start();
    await app.backend.claim(['default'], 5, WORKER, 0, { idle: true });
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.RUNNING);

    // Nobody takes it from the inbox. After the lease, the reaper settles it
    // like any expired lease (MathService.add has no retry policy: FAILED).
    await delay(LEASE_MS + 50);
    const broker = new Broker(app.backend, new TaskExecutor(app.module.get(TaskRegistry)), {
      queues: ['default'],
      intervalMs: 1_000,
      claimTtlMs: 5_000,
      maxRecoveries: 3,
    });
    await broker.pass();
    const result = await app.queue.getResult(id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.errors[0]!.errorClass).toBe(AcknowledgementTimeoutError.name);
  });

  it('runs what an idle worker is handed, and withdraws the worker when it stops', async () => {
    const app = await start({ queues: ['default'] });
    await waitUntil('the idle worker registered', async () => (await idle(app, 'default')).length === 1);
    const ids = [];
    for (let i = 0; i < 5; i++) {
      const { id } = await app.queue.enqueue(MathService, 'add', [i, 1]);
      ids.push(id);
      expect((await app.waitFor(id)).returnValue).toBe(i + 1);
      await waitUntil('the worker registered again', async () => (await idle(app, 'default')).length === 1);
    }
    await app.worker.drain();
    expect(await idle(app, 'default')).toEqual([]);
    // Stopped: a new run waits in READY rather than in a stopped worker's inbox.
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 1]);
    expect((await app.queue.getResult(id)).status).toBe(TaskStatus.READY);
  });
});
