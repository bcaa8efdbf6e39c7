import {
  InvalidProgressError,
  LeaseLostError,
  MAX_LOG_LINES,
  MAX_LOG_LINE_CHARS,
  TaskContext,
  TaskStatus,
} from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunReport } from '../../libs/threadmill/src/backend/task-backend.js';
import { decodeRunPayload } from '../../libs/threadmill/src/codec/run-payload.js';
import { RunReporter } from '../../libs/threadmill/src/task/run-reporter.js';
import { MathService, SlowService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

const lines = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);

/** Whether a run's progress is its task's last step. */
const last = (progress: unknown): boolean => (progress as { step?: number } | undefined)?.step === 3;

describe('progress and logs of running tasks, on Redis', () => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((harness) => harness.close()));
  });

  async function start(worker: boolean, leaseTtlMs = 5_000): Promise<Harness> {
    const harness = await Harness.start({ options: { leaseTtlMs }, worker: worker ? { concurrency: 2 } : false });
    harnesses.push(harness);
    return harness;
  }

  it(`shows a running task's progress and last ${MAX_LOG_LINES} lines in getResult, and keeps them once it succeeds`, async () => {
    const app = await start(true);
    const extra = MAX_LOG_LINES + 10;
    const { id } = await app.queue.enqueue(SlowService, 'reporting', [3, extra, 3_000]);
    // Its first report carries its lines and step 1; steps 2 and 3 follow, each awaited.
    const running = await app.waitFor(id, (r) => r.logs.length === MAX_LOG_LINES && last(r.progress));
    expect(running).toMatchObject({ status: TaskStatus.RUNNING, progress: { step: 3, of: 3 } });
    expect(running.logs).toEqual(lines(11, extra));
    const done = await app.queue.waitFor(id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      returnValue: 'reported',
      progress: { step: 3, of: 3 },
    });
    expect(done.logs).toEqual(lines(11, extra));
  });

  it('keeps the lines a task logged without awaiting right before it returned: its acknowledgement waits for them', async () => {
    const app = await start(true);
    const { id } = await app.queue.enqueue(SlowService, 'reporting', [0, 5, 0], { waitable: true });
    const done = await app.queue.waitFor(id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ status: TaskStatus.SUCCESSFUL, progress: undefined, logs: lines(1, 5) });
  });

  it('streams each progress value and line to a waitFor subscriber while the run runs', async () => {
    const app = await start(true);
    const progress: unknown[] = [];
    const logged: string[] = [];
    // Waitable: registered before it is stored, so nothing it reports comes before the registration.
    const { id } = await app.queue.enqueue(SlowService, 'reporting', [5, 3, 2_000], { waitable: true });
    const done = await app.queue.waitFor(id, {
      timeoutMs: 15_000,
      onProgress: (value) => progress.push(value),
      onLog: (line) => logged.push(line),
    });
    expect(done.status).toBe(TaskStatus.SUCCESSFUL);
    expect(progress).toEqual([1, 2, 3, 4, 5].map((step) => ({ step, of: 5 })));
    expect(logged).toEqual(lines(1, 3));
  });

  it('refuses the writes of an attempt whose lease is gone with LeaseLostError, and stores nothing', async () => {
    const app = await start(false, 300);
    const { id } = await app.queue.enqueue(MathService, 'add', [1, 2]);
    const [run] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const context = new TaskContext(
      run!,
      decodeRunPayload(run!.payload),
      new AbortController().signal,
      new RunReporter(app.backend),
    );
    await context.progress({ done: 1 });
    await context.log('held');
    expect(await app.queue.getResult(id)).toMatchObject({ progress: { done: 1 }, logs: ['held'] });
    await delay(400);
    await expect(context.progress({ done: 2 })).rejects.toThrow(LeaseLostError);
    await expect(context.log('late')).rejects.toThrow(LeaseLostError);
    // Unawaited, a refused write rejects nobody.
    void context.log('ignored');
    expect(await app.queue.getResult(id)).toMatchObject({ progress: { done: 1 }, logs: ['held'] });
  });

  it('coalesces a flood of lines into one call per round trip, and cuts and flattens lines', async () => {
    const app = await start(false);
    await app.queue.enqueue(MathService, 'add', [1, 2]);
    const [run] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const calls: RunReport[][] = [];
    const report = app.backend.report.bind(app.backend);
    app.backend.report = (reports) => {
      calls.push([...reports]);
      return report(reports);
    };
    const context = new TaskContext(
      run!,
      decodeRunPayload(run!.payload),
      new AbortController().signal,
      new RunReporter(app.backend),
    );
    const writes = lines(1, 1_000).map((line) => context.log(line));
    void context.progress(1);
    await context.progress(2);
    await Promise.all(writes);
    expect(calls).toHaveLength(1);
    expect(calls[0]![0]).toMatchObject({ progress: '2' });
    expect(calls[0]![0]!.lines).toEqual(lines(1_000 - MAX_LOG_LINES + 1, 1_000));
    await context.log(`two\r\nparts\nhere`);
    await context.log('x'.repeat(MAX_LOG_LINE_CHARS + 5));
    const { logs, progress } = await app.queue.getResult(run!.id);
    expect(progress).toBe(2);
    expect(logs.at(-2)).toBe('two parts here');
    expect(logs.at(-1)).toBe('x'.repeat(MAX_LOG_LINE_CHARS - 1) + '…');
    expect(logs).toHaveLength(MAX_LOG_LINES);
  });

  it('refuses progress that is not JSON or too large with InvalidProgressError, at once', async () => {
    const app = await start(false);
    await app.queue.enqueue(MathService, 'add', [1, 2]);
    const [run] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    const context = new TaskContext(
      run!,
      decodeRunPayload(run!.payload),
      new AbortController().signal,
      new RunReporter(app.backend),
    );
    expect(() => context.progress(undefined)).toThrow(InvalidProgressError);
    expect(() => context.progress(10n)).toThrow(InvalidProgressError);
    expect(() => context.progress('x'.repeat(20_000))).toThrow(/16384/);
    expect((await app.queue.getResult(run!.id)).progress).toBeUndefined();
  });
});
