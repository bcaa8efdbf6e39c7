import { InvalidRunStateError, TaskInspector, TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LeasedRun, Outcome } from '../../libs/threadmill/src/backend/task-backend.js';
import { EchoService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

const ERROR = { errorClass: 'Error', message: 'no', stack: 'Error: no', attempt: 1 };
/** A worker id with a '|' and characters of several bytes: the record cuts it by its length in bytes. */
const WORKER = 'hôst|1:0:✓';

/**
 * Storage layout 3: a run that succeeds in the attempt that took it from its
 * fresh record is one field of the `done` hash (lua/includes/done.lua); every
 * reader sees the same run it would have seen in a run hash.
 */
describe('done records', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ options: { resultTtlMs: 60_000 } });
  });
  afterAll(() => app.close());

  const redis = () => app.backend.connections.client;
  const inspector = () => app.module.get(TaskInspector);

  async function settle(ids: readonly string[], outcome: (run: LeasedRun) => Outcome): Promise<LeasedRun[]> {
    const leased = (await app.backend.claim(['default'], 100, WORKER, 0)).filter((run) => ids.includes(run.id));
    expect(leased.map((run) => run.id).sort()).toEqual([...ids].sort());
    expect(await app.backend.acknowledge(leased.map((run) => ({ ...run, outcome: outcome(run) })))).toEqual(
      leased.map(() => true),
    );
    return leased;
  }

  it('reads a success from the done hash as it read one from a run hash, results and workers holding "|" and any character', async () => {
    const value = { text: 'a|b|ç|日本|"quoted"', n: [1, 2] };
    const once = await app.queue.enqueue(EchoService, 'echo', [value]);
    const [leased] = await settle([once.id], () => ({ kind: 'successful', returnValue: JSON.stringify(value) }));
    expect(await redis().hexists(app.backend.keys.done, once.id)).toBe(1);
    expect(await redis().exists(app.backend.keys.run(once.id))).toBe(0);
    const result = await app.queue.getResult(once.id);
    expect(result).toMatchObject({
      id: once.id,
      status: TaskStatus.SUCCESSFUL,
      returnValue: value,
      args: [value],
      attempts: 1,
      queue: 'default',
      taskName: once.taskName,
      workerIds: [WORKER],
    });
    expect(result.startedAt?.getTime()).toBe(leased!.claimedAt);
    expect(result.finishedAt!.getTime()).toBeGreaterThanOrEqual(result.startedAt!.getTime());
    expect(result.enqueuedAt.getTime()).toBe(once.enqueuedAt.getTime());

    // The same run after a retry settles into a run hash: both read alike.
    const twice = await app.queue.enqueue(EchoService, 'echo', [value]);
    await settle([twice.id], () => ({ kind: 'retry', error: ERROR, delayMs: 0 }));
    await settle([twice.id], () => ({ kind: 'successful', returnValue: JSON.stringify(value) }));
    expect(await redis().hexists(app.backend.keys.done, twice.id)).toBe(0);
    expect(await redis().hget(app.backend.keys.run(twice.id), 'status')).toBe('SUCCESSFUL');
    expect(await app.queue.getResult(twice.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: value,
      attempts: 2,
      workerIds: [WORKER, WORKER],
    });
    // A success without a return value has no result.
    const bare = await app.queue.enqueue(EchoService, 'echo', [1]);
    await settle([bare.id], () => ({ kind: 'successful', returnValue: undefined }));
    expect(await app.queue.getResult(bare.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: undefined });
  });

  it('answers waiters of a done run, whether it settles while they wait or settled before', async () => {
    const before = await app.queue.enqueue(EchoService, 'echo', ['early']);
    await settle([before.id], () => ({ kind: 'successful', returnValue: '"early"' }));
    expect(await app.queue.waitFor(before.id, { timeoutMs: 2_000 })).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 'early',
      workerIds: [WORKER],
    });

    const during = await app.queue.enqueue(EchoService, 'echo', ['late']);
    const waiting = app.queue.waitFor(during.id, { timeoutMs: 5_000 });
    // Registered before it settles: the acknowledgement publishes the done record's fields.
    await expect.poll(() => redis().zscore(app.backend.keys.waiting, during.id)).not.toBeNull();
    await settle([during.id], () => ({ kind: 'successful', returnValue: '"late|r"' }));
    expect(await waiting).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'late|r', attempts: 1 });
  });

  it('refuses to dequeue, requeue or enqueue again a done run, naming it SUCCESSFUL, and purge removes it', async () => {
    const id = `done-${Date.now()}`;
    await app.queue.enqueue(EchoService, 'echo', ['x'], { id });
    await settle([id], () => ({ kind: 'successful', returnValue: '"x"' }));
    await expect(inspector().dequeue(id)).rejects.toMatchObject({
      name: InvalidRunStateError.name,
      status: 'SUCCESSFUL',
    });
    await expect(inspector().requeue(id)).rejects.toMatchObject({
      name: InvalidRunStateError.name,
      status: 'SUCCESSFUL',
    });
    // A caller's id that a done run holds is taken: the enqueue answers the stored run.
    const again = await app.queue.enqueue(EchoService, 'echo', ['y'], { id });
    expect(again).toMatchObject({ id, status: TaskStatus.SUCCESSFUL, args: ['x'] });
    expect(await redis().hexists(app.backend.keys.fresh, id)).toBe(0);

    const other = await app.queue.enqueue(EchoService, 'echo', ['z'], { queue: 'reports' });
    const [leased] = await app.backend.claim(['reports'], 1, WORKER, 0);
    await app.backend.acknowledge([{ ...leased!, outcome: { kind: 'successful', returnValue: '"z"' } }]);
    expect(await inspector().purge('default')).toBeGreaterThan(0);
    expect(await redis().hexists(app.backend.keys.done, id)).toBe(0);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ successful: 0 });
    // Another queue's done record stays.
    expect(await app.queue.getResult(other.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 'z' });
  });
});
