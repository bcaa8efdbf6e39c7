import {
  InvalidEnqueueError,
  TaskResultNotFoundError,
  TaskStatus,
  UnknownTaskError,
  WaitTimeoutError,
  type TaskResult,
} from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EchoService,
  FailService,
  MailService,
  MathService,
  OrderService,
  PolicyService,
} from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

/** What two backends must agree on in a result; times and worker ids differ by nature. */
const shape = (result: TaskResult) => ({
  taskName: result.taskName,
  queue: result.queue,
  priority: result.priority,
  status: result.status,
  args: result.args,
  attempts: result.attempts,
  workers: result.workerIds.length,
  errors: result.errors.map(({ errorClass, message, attempt }) => ({ errorClass, message, attempt })),
  returnValue: result.returnValue,
  started: result.startedAt !== null,
  finished: result.finishedAt !== null,
  quarantine: result.quarantine?.reason,
});

/** A memory figure, by kind: a byte count, zero, or none (a backend that cannot tell). */
const memoryKind = (bytes: number | null) => (bytes === null ? 'none' : bytes > 0 ? 'bytes' : 'zero');

/** Polls run `id` until its second attempt settled (waitFor would answer the first at once). */
async function settledAgain(app: Subject, id: string): Promise<TaskResult> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const result = await app.queue.getResult(id);
    if (result.attempts === 2 && result.finishedAt !== null) return result;
    if (Date.now() > deadline) throw new Error(`run ${id} did not settle again: ${JSON.stringify(result)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(BACKENDS)('conformance: the $name backend', (backend) => {
  describe('storing runs', () => {
    let app: Subject;
    beforeAll(async () => {
      app = await backend.producer();
    });
    afterAll(() => app.close());

    it('stores a run READY with a ULID id, and reads it back the same', async () => {
      const enqueued = await app.queue.enqueue(MathService, 'add', [2, 3]);
      expect(enqueued.id).toMatch(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
      const stored = await app.queue.getResult(enqueued.id);
      expect(shape(stored)).toEqual({
        taskName: 'MathService.add',
        queue: 'default',
        priority: 0,
        status: TaskStatus.READY,
        args: [2, 3],
        attempts: 0,
        workers: 0,
        errors: [],
        returnValue: undefined,
        started: false,
        finished: false,
        quarantine: undefined,
      });
      expect(stored.enqueuedAt).toEqual(enqueued.enqueuedAt);
    });

    it('answers an id that exists with the stored run, and stores nothing twice', async () => {
      const id = `order-${backend.name}-${Date.now()}`;
      const first = await app.queue.enqueue(MathService, 'add', [1, 1], { id });
      const again = await app.queue.enqueue(MathService, 'add', [9, 9], { id });
      expect(again.id).toBe(id);
      expect(again.args).toEqual([1, 1]);
      expect(again.enqueuedAt).toEqual(first.enqueuedAt);
    });

    it('round-trips arguments through the payload codec: a Date comes back a Date', async () => {
      const at = new Date('2026-12-06T08:00:00.000Z');
      const { id } = await app.queue.enqueue(EchoService, 'echo', [{ at, list: [], big: 2 ** 52 }]);
      const [arg] = (await app.queue.getResult(id)).args as [{ at: Date; list: unknown[]; big: number }];
      expect(arg.at).toBeInstanceOf(Date);
      expect(arg.at.toISOString()).toBe(at.toISOString());
      expect(arg.list).toEqual([]);
      expect(arg.big).toBe(2 ** 52);
    });

    it('defers a run with delayMs or runAfter: READY with its runAfter, counted as deferred', async () => {
      const [before] = await app.queue.counts(['reports']);
      const delayed = await app.queue.enqueue(MathService, 'multiply', [2, 2], { delayMs: 60_000 });
      const at = new Date(Date.now() + 120_000);
      const scheduled = await app.queue.enqueue(MathService, 'multiply', [3, 3], { runAfter: at });
      expect((await app.queue.getResult(delayed.id)).runAfter!.getTime()).toBeGreaterThan(Date.now() + 50_000);
      expect((await app.queue.getResult(scheduled.id)).runAfter).toEqual(at);
      const [after] = await app.queue.counts(['reports']);
      expect(after!.deferred - before!.deferred).toBe(2);
      expect(after!.ready - before!.ready).toBe(0);
    });

    it('orders ready runs by priority, then first in first out (of one partition key)', async () => {
      const enqueue = (tag: string, priority: number) =>
        app.queue.enqueue(OrderService, 'recordEmail', [tag], { priority, partitionKey: 'order' });
      const ids: Record<string, string> = {};
      for (const [tag, priority] of [
        ['low', -5],
        ['a', 0],
        ['high', 10],
        ['b', 0],
        ['higher', 20],
        ['c', 0],
      ] as const) {
        ids[tag] = (await enqueue(tag, priority)).id;
      }
      const page = await app.inspector.list('emails', 'ready');
      expect(page.map((run) => run.args[0])).toEqual(['higher', 'high', 'a', 'b', 'c', 'low']);
      expect(page.map((run) => run.id)).toEqual(['higher', 'high', 'a', 'b', 'c', 'low'].map((tag) => ids[tag]));
    });

    it('stores enqueueMany in order, all or nothing', async () => {
      const results = await app.queue.enqueueMany([
        { task: MathService, method: 'add', args: [1, 2] },
        { task: 'math.multiply', args: [3, 4], priority: 5 },
      ]);
      expect(results.map((r) => [r.taskName, r.queue, r.priority, r.status])).toEqual([
        ['MathService.add', 'default', 0, TaskStatus.READY],
        ['math.multiply', 'reports', 5, TaskStatus.READY],
      ]);
      const counts = await app.queue.counts();
      await expect(
        app.queue.enqueueMany([
          { task: MathService, method: 'add', args: [5, 5] },
          { task: MailService, method: 'send', args: [{ to: 'not an address', subject: 'hi' } as never] },
        ]),
      ).rejects.toThrow(InvalidEnqueueError);
      expect(await app.queue.counts()).toEqual(counts);
    });

    it('refuses bad input with a typed error and writes nothing', async () => {
      const counts = await app.queue.counts();
      await expect(app.queue.enqueue(MathService, 'nope' as never, [] as never)).rejects.toThrow(UnknownTaskError);
      await expect(app.queue.enqueue(MailService, 'send', [{ to: 'nobody', subject: '' } as never])).rejects.toThrow(
        /MailService\.send.*arguments are invalid/s,
      );
      await expect(app.queue.enqueue(EchoService, 'echo', ['x'.repeat(2 * 1024 * 1024)])).rejects.toThrow(
        /over maxPayloadBytes/,
      );
      await expect(app.queue.enqueue(EchoService, 'echo', [10n as never])).rejects.toThrow(InvalidEnqueueError);
      await expect(app.queue.enqueue(MathService, 'add', [1, 2], { priority: 500 })).rejects.toThrow(
        InvalidEnqueueError,
      );
      expect(await app.queue.counts()).toEqual(counts);
    });

    it('dequeues a ready run, which is then not found', async () => {
      const { id } = await app.queue.enqueue(MathService, 'add', [4, 4]);
      await app.inspector.dequeue(id);
      await expect(app.queue.getResult(id)).rejects.toThrow(TaskResultNotFoundError);
    });

    it('times waitFor out on a run that does not settle, and leaves it untouched', async () => {
      const { id } = await app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 60_000 });
      await expect(app.queue.waitFor(id, { timeoutMs: 50 })).rejects.toThrow(WaitTimeoutError);
      expect((await app.queue.getResult(id)).status).toBe(TaskStatus.READY);
      await expect(app.queue.waitFor('no-such-run', { timeoutMs: 1_000 })).rejects.toThrow(TaskResultNotFoundError);
    });
  });

  describe('running runs', () => {
    let app: Subject;
    beforeAll(async () => {
      app = await backend.executing();
    });
    afterAll(() => app.close());

    const run = async (enqueued: Promise<TaskResult>) => app.queue.waitFor((await enqueued).id, { timeoutMs: 20_000 });

    it('runs a task through DI and keeps its result', async () => {
      const result = await run(app.queue.enqueue(MathService, 'add', [2, 3]));
      expect(shape(result)).toEqual({
        taskName: 'MathService.add',
        queue: 'default',
        priority: 0,
        status: TaskStatus.SUCCESSFUL,
        args: [2, 3],
        attempts: 1,
        workers: 1,
        errors: [],
        returnValue: 5,
        started: true,
        finished: true,
        quarantine: undefined,
      });
      expect(shape(await app.queue.getResult(result.id))).toEqual(shape(result));
    });

    it('hands the task its DTO rehydrated, and a Date argument as a Date', async () => {
      const email = await run(
        app.queue.enqueue(MailService, 'send', [{ to: 'a@example.com', subject: 'Hi' } as never]),
      );
      expect(email.returnValue).toEqual({
        greeting: 'Hi for a@example.com with 0 attachment(s)',
        isInstance: true,
        attachmentIsInstance: true,
      });
      const at = new Date('2026-01-02T03:04:05.000Z');
      const echoed = await run(app.queue.enqueue(EchoService, 'echo', [at]));
      expect(echoed.returnValue).toBeInstanceOf(Date);
      expect((echoed.returnValue as Date).toISOString()).toBe(at.toISOString());
    });

    it('retries a failing run, keeping its id and every error, until it succeeds', async () => {
      const result = await run(app.queue.enqueue(FailService, 'flaky', [2]));
      expect(shape(result)).toMatchObject({
        status: TaskStatus.SUCCESSFUL,
        attempts: 3,
        workers: 3,
        returnValue: 'succeeded on attempt 3',
        errors: [
          { errorClass: 'FixtureError', message: 'attempt 1 fails', attempt: 1 },
          { errorClass: 'FixtureError', message: 'attempt 2 fails', attempt: 2 },
        ],
      });
    });

    it('finishes FAILED after maxRetries, and at once without a policy or for a NonRetryableError', async () => {
      expect(shape(await run(app.queue.enqueue(FailService, 'flaky', [10])))).toMatchObject({
        status: TaskStatus.FAILED,
        attempts: 4,
        errors: [1, 2, 3, 4].map((attempt) => ({
          errorClass: 'FixtureError',
          message: `attempt ${attempt} fails`,
          attempt,
        })),
      });
      expect(shape(await run(app.queue.enqueue(FailService, 'alwaysFail', ['boom'])))).toMatchObject({
        status: TaskStatus.FAILED,
        attempts: 1,
        errors: [{ errorClass: 'FixtureError', message: 'boom', attempt: 1 }],
      });
      expect(shape(await run(app.queue.enqueue(PolicyService, 'declined', [])))).toMatchObject({
        status: TaskStatus.FAILED,
        attempts: 1,
        errors: [{ errorClass: 'NonRetryableError', message: 'card declined', attempt: 1 }],
      });
    });

    it('quarantines a run whose retry policy throws, with its error', async () => {
      const result = await run(app.queue.enqueue(PolicyService, 'withBrokenPolicy', []));
      expect(shape(result)).toMatchObject({
        status: TaskStatus.QUARANTINED,
        attempts: 1,
        quarantine: 'retry-policy-failed',
        errors: [{ errorClass: 'FixtureError', message: 'task failed', attempt: 1 }],
      });
      expect(result.quarantine!.message).toMatch(
        /retry policy of PolicyService\.withBrokenPolicy threw RangeError: policy bug/,
      );
      const [counts] = await app.inspector.counts(['default']);
      expect(counts!.quarantined).toBeGreaterThanOrEqual(1);
    });

    it('quarantines a run of a task no application here declares, with the reason', async () => {
      const result = await run(app.queue.enqueue('nobody.declares', [1], { queue: 'default' }));
      expect(shape(result)).toMatchObject({
        taskName: 'nobody.declares',
        status: TaskStatus.QUARANTINED,
        attempts: 1,
        errors: [],
        quarantine: 'unknown-task',
      });
      expect(result.quarantine!.message).toMatch(/Task "nobody.declares" is not registered/);
    });

    it('answers waitFor at once for a run that settled already', async () => {
      const { id } = await run(app.queue.enqueue(MathService, 'add', [7, 8]));
      expect((await app.queue.waitFor(id, { timeoutMs: 1_000 })).returnValue).toBe(15);
    });

    it('runs a FAILED run again once it is requeued through the inspector', async () => {
      const failed = await run(app.queue.enqueue(FailService, 'alwaysFail', ['again']));
      await app.inspector.requeue(failed.id);
      const again = await settledAgain(app, failed.id);
      expect(shape(again)).toMatchObject({
        status: TaskStatus.FAILED,
        attempts: 2,
        workers: 2,
        errors: [1, 2].map((attempt) => ({ errorClass: 'FixtureError', message: 'again', attempt })),
      });
    });

    it('counts the finished runs it keeps, and their finish rate, in the capacity report', async () => {
      const before = await app.inspector.capacity();
      for (const i of [1, 2, 3]) await run(app.queue.enqueue(MathService, 'add', [i, i]));
      await run(app.queue.enqueue(FailService, 'alwaysFail', ['kept']));
      const after = await app.inspector.capacity();
      expect(after.kept.successful - before.kept.successful).toBe(3);
      expect(after.kept.failed - before.kept.failed).toBe(1);
      expect(after.storedRuns - before.storedRuns).toBe(4);
      expect(after.finishedPerSecond.successful).toBeGreaterThan(0);
      expect(after.finishedPerSecond.failed).toBeGreaterThan(0);
      expect(after.resultTtlMs).toEqual({ successful: 86_400_000, failed: 86_400_000 });
      // Neither the test run's Redis nor process memory has a limit: nothing is compared, nothing warned.
      expect(after).toMatchObject({ maxBytes: null, over: { used: false, projected: false }, warning: null });
      // Redis measures its memory; the in-memory backend reports no figure rather than process memory.
      const memory = await app.backend.memory();
      const figures = [memory.usedBytes, memory.datasetBytes, after.projectedBytes];
      expect(figures.map(memoryKind)).toEqual(figures.map(() => (backend.measuresMemory ? 'bytes' : 'none')));
      expect(after.projectedBytes ?? 0).toBeGreaterThanOrEqual(after.usedBytes ?? 0);
    });
  });
});
