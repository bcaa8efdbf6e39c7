import { TaskStatus, type RequeueAllProgress } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../libs/threadmill/src/backend/task-backend.js';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const WORKER = 'host:1:0';
const error = { errorClass: 'Error', message: 'boom', stack: '', attempt: 1 };

describe.each(BACKENDS)('conformance: requeueing a segment on the $name backend', (backend) => {
  // A new keyspace per test (the in-memory backend's is its module's).
  let app: Subject;
  beforeEach(async () => {
    app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work'] });
  });
  afterEach(() => app.close());

  // One partition key: one order, on a partitioned backend too.
  const enqueue = async (n: number): Promise<string[]> =>
    (
      await app.queue.enqueueMany(
        Array.from({ length: n }, (_, i) => ({
          task: 'MathService.add',
          args: [i, 1],
          queue: 'work',
          partitionKey: 'work',
        })),
      )
    ).map((run) => run.id);
  /** Claims `n` runs and settles them with `outcome`, in the order they were claimed. */
  const settle = async (n: number, outcome: Outcome): Promise<string[]> => {
    const leased = await app.backend.claim(['work'], n, WORKER, 0);
    const acks = leased.map((run) => ({ id: run.id, queue: 'work', token: run.token, outcome }));
    expect(await app.backend.acknowledge(acks)).toEqual(acks.map(() => true));
    return leased.map((run) => run.id);
  };
  const counts = async () => (await app.inspector.counts(['work']))[0]!;

  it('requeues every run of the segment, each as a single requeue would, and reports its progress', async () => {
    const ids = await enqueue(12);
    const failed = await settle(5, { kind: 'failed', error });
    const quarantined = await settle(4, { kind: 'quarantine', reason: 'invalid-arguments', message: 'bad' });
    await app.queue.cancel(ids[9]!);
    const progress: RequeueAllProgress[] = [];
    const requeued = await app.inspector.requeueAll('work', 'failed', {
      chunkSize: 2,
      onProgress: (step) => progress.push(step),
    });
    expect(requeued).toBe(5);
    expect(progress.at(-1)).toMatchObject({ queue: 'work', segment: 'failed', requeued: 5, done: true });
    expect(progress.reduce((sum, step) => sum + step.chunkRequeued, 0)).toBe(5);
    expect(await counts()).toMatchObject({ ready: 7, failed: 0, quarantined: 4, cancelled: 1 });
    for (const id of failed) {
      expect(await app.queue.getResult(id)).toMatchObject({ status: TaskStatus.READY, attempts: 1 });
    }
    expect((await app.backend.stats('work'))['requeued']).toBe(5);
    // Back at their places: before the runs enqueued after them.
    expect((await app.backend.claim(['work'], 12, WORKER, 0)).map((run) => run.id)).toEqual([
      ...failed,
      ...ids.slice(10),
    ]);

    expect(await app.inspector.requeueAll('work', 'quarantined')).toBe(4);
    const result = await app.queue.getResult(quarantined[0]!);
    expect(result.status).toBe(TaskStatus.READY);
    expect(result.quarantine).toBeUndefined();
    expect(await app.inspector.requeueAll('work', 'cancelled')).toBe(1);
    expect(await app.inspector.requeueAll('work', 'cancelled')).toBe(0);
    expect(await counts()).toMatchObject({ ready: 5, running: 7, failed: 0, quarantined: 0, cancelled: 0 });
    expect((await app.backend.stats('work'))['requeued']).toBe(10);
  });
});
