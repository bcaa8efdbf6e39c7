import { TaskStatus } from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

describe('retries', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ worker: { concurrency: 4 } });
  });
  afterAll(() => app.close());

  it('retries with exponential backoff, keeping the id and every error', async () => {
    const enqueued = await app.queue.enqueue(FailService, 'flaky', [2]);
    const result = await app.waitFor(enqueued.id);
    expect(result.id).toBe(enqueued.id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.returnValue).toBe('succeeded on attempt 3');
    expect(result.attempts).toBe(3);
    expect(result.workerIds).toHaveLength(3);
    expect(result.errors.map((e) => [e.errorClass, e.message, e.attempt])).toEqual([
      ['FixtureError', 'attempt 1 fails', 1],
      ['FixtureError', 'attempt 2 fails', 2],
    ]);
    expect(result.errors[0]!.stack).toMatch(/attempt 1 fails\n\s+at FailService\.flaky/);
    // Backoff 50 ms then 100 ms.
    expect(result.finishedAt!.getTime() - result.enqueuedAt.getTime()).toBeGreaterThanOrEqual(150);
    expect(result.startedAt!.getTime()).toBeLessThan(result.lastAttemptedAt!.getTime());
  });

  it('finishes FAILED after maxRetries retries', async () => {
    const enqueued = await app.queue.enqueue(FailService, 'flaky', [10]);
    const result = await app.waitFor(enqueued.id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(4);
    expect(result.errors).toHaveLength(4);
    expect(result.returnValue).toBeUndefined();
  });

  it('finishes FAILED at once without a retry policy', async () => {
    const enqueued = await app.queue.enqueue(FailService, 'alwaysFail', ['boom']);
    const result = await app.waitFor(enqueued.id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
    expect(result.errors).toEqual([
      expect.objectContaining({ errorClass: 'FixtureError', message: 'boom', attempt: 1 }),
    ]);
  });

  it('finishes FAILED when a function policy returns null', async () => {
    const result = await app.waitFor((await app.queue.enqueue(FailService, 'givesUp', [])).id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
  });

  it('does not retry an error outside retryOn', async () => {
    const result = await app.waitFor((await app.queue.enqueue(FailService, 'typeError', [])).id);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
    expect(result.errors[0]!.errorClass).toBe('TypeError');
  });
});
