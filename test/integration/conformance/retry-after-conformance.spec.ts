import { TaskStatus } from '@threadmill/nestjs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

describe.each(BACKENDS)(
  'conformance: deferring a leased run uncharged (retryAfter) on the $name backend',
  (backend) => {
    // A new keyspace per test (the in-memory backend's is its module's).
    let app: Subject;
    beforeEach(async () => {
      app = await backend.producer({ queues: [...FIXTURE_QUEUES, 'work'] });
    });
    afterEach(() => app.close());

    it('defers a started run by the delay with its attempts unchanged, then leases it as the same attempt', async () => {
      const queue = 'work';
      const run = await app.queue.enqueue('MathService.add', [1, 2], { queue });
      const [leased] = await app.backend.claim([queue], 1, 'host:1:0', 0);
      expect(await app.backend.acknowledge([], [leased!])).toEqual([]);
      expect(await app.backend.defer([{ ...leased!, delayMs: 60_000 }])).toEqual([true]);
      const deferred = await app.queue.getResult(run.id);
      expect(deferred.status).toBe(TaskStatus.READY);
      expect(deferred.attempts).toBe(0);
      expect(deferred.errors).toEqual([]);
      expect((await app.inspector.counts([queue]))[0]).toMatchObject({ ready: 0, deferred: 1, running: 0 });
      expect((await app.backend.stats(queue))['retried'] ?? 0).toBe(0);
      // The lease is gone: a second defer or an acknowledgement of it is stale.
      expect(await app.backend.defer([{ ...leased!, delayMs: 10 }])).toEqual([false]);
      expect(
        await app.backend.acknowledge([{ ...leased!, outcome: { kind: 'successful', returnValue: '3' } }]),
      ).toEqual([false]);
      expect(await app.backend.claim([queue], 1, 'host:1:0', 0)).toEqual([]);
    });

    it('brings the run back when its delay has passed, as the same attempt number', async () => {
      const queue = 'work';
      const run = await app.queue.enqueue('MathService.add', [1, 2], { queue });
      const [leased] = await app.backend.claim([queue], 1, 'host:1:0', 0);
      expect(await app.backend.defer([{ ...leased!, delayMs: 50 }])).toEqual([true]);
      const deadline = Date.now() + 10_000;
      while ((await app.backend.promote([queue])).promoted === 0) {
        if (Date.now() > deadline) throw new Error('the deferred run never came due');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const [again] = await app.backend.claim([queue], 1, 'host:1:0', 0);
      expect(again!.id).toBe(run.id);
      expect(again!.attempts).toBe(1);
      await app.backend.acknowledge([{ ...again!, outcome: { kind: 'successful', returnValue: '3' } }]);
      const result = await app.queue.getResult(run.id);
      expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1 });
    });
  },
);
