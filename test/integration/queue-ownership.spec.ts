import { TaskStatus } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { FailService, MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

/**
 * An id may be reused once its run is gone, in any queue. Purge, dequeue and
 * requeue name a queue: they must never touch the run of another queue that
 * reuses an id they find, and must leave that queue's counts as they are.
 */
describe('purge, dequeue and requeue touch only their queue', () => {
  let app: Harness;
  afterEach(async () => {
    await app.close();
  });

  const counts = async (queue: string) => (await app.queue.counts([queue]))[0]!;

  it("purges no run of another queue that reuses the id of a run dequeued from the purged queue's list", async () => {
    app = await Harness.start({});
    await app.queue.enqueue(MathService, 'add', [1, 1], { id: 'shared' });
    expect((await app.backend.dequeue('shared', 'default')).removed).toBe(true);
    await app.queue.enqueue(MathService, 'add', [2, 2], { id: 'shared', queue: 'emails' });
    await app.queue.enqueue(MathService, 'add', [3, 3], { id: 'mine' });
    expect(await app.backend.purge('default')).toBe(1);
    expect(await app.queue.getResult('shared')).toMatchObject({
      queue: 'emails',
      status: TaskStatus.READY,
      args: [2, 2],
    });
    expect(await counts('emails')).toMatchObject({ ready: 1 });
    const [claimed] = await app.backend.claim(['emails'], 1, 'host:1:0', 0);
    expect(claimed!.id).toBe('shared');
  });

  it('purges no run of another queue that reuses the id of a finished run whose result expired', async () => {
    app = await Harness.start({ options: { resultTtlMs: 200 } });
    const broker = new Broker(app.backend, new TaskExecutor(app.module.get(TaskRegistry)), {
      queues: ['default', 'emails'],
      intervalMs: 1_000,
      claimTtlMs: 5_000,
      maxRecoveries: 3,
    });
    await app.queue.enqueue(MathService, 'add', [1, 1], { id: 'reused' });
    const [leased] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    await app.backend.acknowledge([{ ...leased!, outcome: { kind: 'successful', returnValue: '2' } }]);
    expect(await counts('default')).toMatchObject({ successful: 1 });
    await delay(300);
    // The quiet queue's expired result goes with its index entry.
    await broker.pass();
    expect(await counts('default')).toMatchObject({ successful: 0 });
    await app.queue.enqueue(MathService, 'add', [5, 5], { id: 'reused', queue: 'emails' });
    expect(await app.backend.purge('default')).toBe(0);
    expect(await app.queue.getResult('reused')).toMatchObject({ queue: 'emails', status: TaskStatus.READY });
    const [claimed] = await app.backend.claim(['emails'], 1, 'host:1:0', 0);
    expect(claimed!.id).toBe('reused');
  });

  it('refuses to dequeue a run that is in another queue, and changes nothing', async () => {
    app = await Harness.start({});
    // The inspector read `moved` in default; it was re-enqueued into emails since.
    await app.queue.enqueue(MathService, 'add', [1, 1], { id: 'moved', queue: 'emails' });
    expect(await app.backend.dequeue('moved', 'default')).toEqual({ removed: false, status: '' });
    expect(await app.queue.getResult('moved')).toMatchObject({ queue: 'emails', status: TaskStatus.READY });
    expect(await counts('default')).toMatchObject({ ready: 0 });
    expect(await counts('emails')).toMatchObject({ ready: 1 });
    // A later run of default is served (no false tombstone hides it).
    const { id } = await app.queue.enqueue(MathService, 'add', [2, 2], { id: 'later' });
    expect(await counts('default')).toMatchObject({ ready: 1 });
    expect((await app.backend.claim(['default'], 1, 'host:1:0', 0)).map((run) => run.id)).toEqual([id]);
  });

  it('refuses to requeue a failed run of another queue', async () => {
    app = await Harness.start({});
    await app.queue.enqueue(FailService, 'alwaysFail', ['no'], { id: 'broken', queue: 'emails' });
    const [leased] = await app.backend.claim(['emails'], 1, 'host:1:0', 0);
    const error = { errorClass: 'Error', message: 'no', stack: 'Error: no', attempt: 1 };
    await app.backend.acknowledge([{ ...leased!, outcome: { kind: 'failed', error } }]);
    expect(await app.backend.requeue('broken', 'default')).toEqual({ requeued: false, status: '' });
    expect(await app.queue.getResult('broken')).toMatchObject({ queue: 'emails', status: TaskStatus.FAILED });
    expect(await app.backend.requeue('broken', 'emails')).toEqual({ requeued: true, status: 'FAILED' });
  });
});
