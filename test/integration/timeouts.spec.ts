import { Injectable, Module } from '@nestjs/common';
import {
  ExponentialBackoff,
  InvalidTaskError,
  Task,
  TaskContext,
  TaskStatus,
  TaskTimeoutError,
} from '@threadmill/nestjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTaskSettings } from '../../libs/threadmill/src/task/task-settings.js';
import { Harness } from '../support/harness.js';

/**
 * What the tasks did, kept outside Threadmill: attempts started, attempts
 * whose code ran to its end, and the reasons their signals gave.
 */
const witness = {
  started: new Map<string, number>(),
  finished: new Map<string, number>(),
  reasons: [] as unknown[],
  spans: [] as { key: string; from: number; to: number }[],
};
const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

@Injectable()
class SlowService {
  /** Ignores its signal: runs its 5 s to the end whatever happens. */
  @Task({ timeoutMs: 1_000, retry: new ExponentialBackoff({ maxRetries: 1, baseDelayMs: 10 }) })
  async stubborn(key: string): Promise<string> {
    count(witness.started, key);
    await sleep(5_000);
    count(witness.finished, key);
    return 'late';
  }

  /** Stops when its signal aborts, as a task should. */
  @Task({ timeoutMs: 300 })
  async polite(key: string, context: TaskContext): Promise<string> {
    count(witness.started, key);
    try {
      await sleep(5_000, undefined, { signal: context.signal });
    } catch {
      witness.reasons.push(context.signal.reason);
      throw context.signal.reason;
    }
    count(witness.finished, key);
    return 'done';
  }

  /** Ignores its signal for 1.5 s, past its 300 ms timeout, recording when its code ran. */
  @Task({ timeoutMs: 300 })
  async overstays(key: string): Promise<void> {
    witness.spans.push({ key, from: Date.now(), to: 0 });
    const span = witness.spans.at(-1)!;
    await sleep(1_500);
    span.to = Date.now();
  }

  /** Records when its code ran. */
  @Task()
  async brief(key: string): Promise<void> {
    witness.spans.push({ key, from: Date.now(), to: Date.now() });
  }

  /** Returns in time: the timer is cleared and the result kept. */
  @Task({ timeoutMs: 2_000 })
  async quick(key: string): Promise<string> {
    count(witness.started, key);
    await sleep(20);
    count(witness.finished, key);
    return 'quick';
  }
}

@Module({ providers: [SlowService] })
class SlowModule {}

describe('attempt timeouts (@Task({ timeoutMs }))', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ imports: [SlowModule], worker: { concurrency: 4 } });
  });
  afterAll(() => app.close());

  it('fails a 5 s attempt of a 1 s timeout with TaskTimeoutError and retries it per policy, discarding the late return', async () => {
    const run = await app.queue.enqueue(SlowService, 'stubborn', ['a']);
    const result = await app.waitFor(run.id, undefined, 20_000);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(2);
    expect(result.errors.map((e) => [e.errorClass, e.attempt])).toEqual([
      ['TaskTimeoutError', 1],
      ['TaskTimeoutError', 2],
    ]);
    expect(result.errors[0]!.message).toMatch(/timed out after 1000 ms/);
    // Both attempts really started (the retry was not charged for nothing)...
    expect(witness.started.get('a')).toBe(2);
    // ...and the retry came after the first timeout, not after the 5 s the code took.
    const elapsed = result.finishedAt!.getTime() - result.startedAt!.getTime();
    expect(elapsed).toBeGreaterThanOrEqual(2_000);
    expect(elapsed).toBeLessThan(4_500);
    expect(result.returnValue).toBeUndefined();
    // The code that ignored its signal ran on, and what it returned then changed nothing.
    await sleep(5_000 - elapsed + 1_500);
    expect(witness.finished.get('a')).toBe(2);
    expect(await app.queue.getResult(run.id)).toMatchObject({ status: TaskStatus.FAILED, attempts: 2 });
  });

  it("aborts the attempt's signal with the TaskTimeoutError, and a task that stops on it ends FAILED without a policy", async () => {
    const run = await app.queue.enqueue(SlowService, 'polite', ['b']);
    const result = await app.waitFor(run.id, undefined, 10_000);
    expect(result.status).toBe(TaskStatus.FAILED);
    expect(result.attempts).toBe(1);
    expect(result.errors[0]!.errorClass).toBe('TaskTimeoutError');
    expect(witness.reasons.at(-1)).toBeInstanceOf(TaskTimeoutError);
    expect(witness.reasons.at(-1)).toMatchObject({ runId: run.id, timeoutMs: 300 });
    expect(witness.finished.get('b')).toBeUndefined();
  });

  it('leaves an attempt that returns in time alone', async () => {
    const run = await app.queue.enqueue(SlowService, 'quick', ['c']);
    const result = await app.waitFor(run.id, undefined, 10_000);
    expect(result).toMatchObject({ status: TaskStatus.SUCCESSFUL, attempts: 1, returnValue: 'quick' });
    expect(witness.finished.get('c')).toBe(1);
  });

  it('refuses a timeoutMs that is not a positive integer of a timer, naming the task and the rule', () => {
    for (const timeoutMs of [0, -5, 1.5, '1000', 2 ** 31]) {
      expect(() => resolveTaskSettings({ name: 't', timeoutMs }, 'SlowService#t', '@Task()', undefined)).toThrow(
        InvalidTaskError,
      );
      expect(() => resolveTaskSettings({ name: 't', timeoutMs }, 'SlowService#t', '@Task()', undefined)).toThrow(
        /SlowService#t.*timeoutMs must be an integer from 1 to 2147483647 ms/,
      );
    }
    expect(resolveTaskSettings({ name: 't', timeoutMs: 5 }, 'S#t', '@Task()', undefined).timeoutMs).toBe(5);
  });
});

describe('a timed-out attempt that ignores its signal', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ imports: [SlowModule], worker: { concurrency: 1 } });
  });
  afterAll(() => app.close());

  it('keeps its slot until its code returns: a worker of concurrency 1 never runs two attempts at once', async () => {
    const slow = await app.queue.enqueue(SlowService, 'overstays', ['slow']);
    const next = await app.queue.enqueue(SlowService, 'brief', ['next']);
    const failed = await app.waitFor(slow.id, undefined, 10_000);
    // Its failure is acknowledged at the timeout, long before its code returns...
    expect(failed).toMatchObject({ status: TaskStatus.FAILED, attempts: 1 });
    expect(failed.errors[0]!.errorClass).toBe('TaskTimeoutError');
    expect(witness.spans.find((span) => span.key === 'slow')!.to).toBe(0);
    // ...and the next run starts only once that code returned.
    await app.waitFor(next.id, undefined, 10_000);
    const [first, second] = [
      witness.spans.find((s) => s.key === 'slow')!,
      witness.spans.find((s) => s.key === 'next')!,
    ];
    expect(first.to).toBeGreaterThan(0);
    expect(second.from).toBeGreaterThanOrEqual(first.to);
  });
});
