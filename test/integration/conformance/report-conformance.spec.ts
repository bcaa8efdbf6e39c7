import { MAX_LOG_LINES, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { LeasedRun } from '../../../libs/threadmill/src/backend/task-backend.js';
import { MathService } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const LEASE_MS = 300;
const SUCCESS = { kind: 'successful', returnValue: '2' } as const;
const lines = (from: number, to: number): string[] =>
  Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);

// What `context.progress` and `context.log` store, driven by hand through the backend.
describe.each(BACKENDS)('report conformance: the $name backend', (backend) => {
  const apps: Subject[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function leased(): Promise<{ app: Subject; run: LeasedRun }> {
    const app = await backend.producer({ leaseTtlMs: LEASE_MS, resultTtlMs: 60_000 });
    apps.push(app);
    await app.queue.enqueue(MathService, 'add', [1, 1]);
    const [run] = await app.backend.claim(['default'], 1, 'host:1:0', 0);
    return { app, run: run! };
  }

  it('stores the latest progress and the log lines of a running run, kept once it succeeds', async () => {
    const { app, run } = await leased();
    const fresh = await app.queue.getResult(run.id);
    expect(fresh).toMatchObject({ progress: undefined, logs: [] });
    expect(await app.backend.report([{ ...run, progress: '{"step":1}', lines: ['first', ''] }])).toEqual([true]);
    expect(await app.backend.report([{ ...run, progress: '{"step":2,"of":3}', lines: ['last'] }])).toEqual([true]);
    expect(await app.queue.getResult(run.id)).toMatchObject({
      status: TaskStatus.RUNNING,
      attempts: 1,
      progress: { step: 2, of: 3 },
      logs: ['first', '', 'last'],
    });
    expect(await app.backend.acknowledge([{ ...run, outcome: SUCCESS }])).toEqual([true]);
    expect(await app.queue.getResult(run.id)).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      attempts: 1,
      returnValue: 2,
      workerIds: ['host:1:0'],
      progress: { step: 2, of: 3 },
      logs: ['first', '', 'last'],
    });
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ successful: 1, running: 0 });
  });

  it(`keeps the last ${MAX_LOG_LINES} lines, across calls and within one`, async () => {
    const { app, run } = await leased();
    expect(await app.backend.report([{ ...run, lines: lines(1, 60) }])).toEqual([true]);
    expect(await app.backend.report([{ ...run, lines: lines(61, MAX_LOG_LINES + 10) }])).toEqual([true]);
    const { logs } = await app.queue.getResult(run.id);
    expect(logs).toEqual(lines(11, MAX_LOG_LINES + 10));
    expect(await app.backend.report([{ ...run, lines: lines(1, MAX_LOG_LINES + 30) }])).toEqual([true]);
    expect((await app.queue.getResult(run.id)).logs).toEqual(lines(31, MAX_LOG_LINES + 30));
  });

  it('refuses a report under another token, after the outcome, and after the lease expired', async () => {
    const { app, run } = await leased();
    expect(await app.backend.report([{ ...run, token: 'not-the-token', progress: '1', lines: ['x'] }])).toEqual([
      false,
    ]);
    expect(await app.backend.report([{ ...run, queue: 'emails', progress: '1', lines: ['x'] }])).toEqual([false]);
    expect(await app.queue.getResult(run.id)).toMatchObject({ progress: undefined, logs: [] });
    await delay(LEASE_MS + 50);
    expect(await app.backend.report([{ ...run, progress: '2', lines: ['late'] }])).toEqual([false]);
    expect(await app.queue.getResult(run.id)).toMatchObject({ progress: undefined, logs: [] });
  });

  it('refuses one report of a batch and stores the others, and keeps them through a retry', async () => {
    const app = await backend.producer({ leaseTtlMs: 5_000 });
    apps.push(app);
    await app.queue.enqueue(MathService, 'add', [1, 1]);
    await app.queue.enqueue(MathService, 'add', [2, 2]);
    const [a, b] = await app.backend.claim(['default'], 2, 'host:1:0', 0);
    expect(await app.backend.acknowledge([{ ...b!, outcome: SUCCESS }])).toEqual([true]);
    expect(
      await app.backend.report([
        { ...a!, progress: '"half"', lines: ['a'] },
        { ...b!, progress: '"late"', lines: ['b'] },
      ]),
    ).toEqual([true, false]);
    expect((await app.queue.getResult(b!.id)).logs).toEqual([]);
    const error = { errorClass: 'Error', message: 'again', stack: '', attempt: 1 };
    expect(await app.backend.acknowledge([{ ...a!, outcome: { kind: 'retry', error, delayMs: 0 } }])).toEqual([true]);
    const [again] = await app.backend.claim(['default'], 1, 'host:2:0', 0);
    expect(again).toMatchObject({ id: a!.id, attempts: 2 });
    expect(await app.queue.getResult(a!.id)).toMatchObject({ progress: 'half', logs: ['a'], attempts: 2 });
    expect(await app.backend.report([{ ...again!, lines: ['a2'] }])).toEqual([true]);
    expect(await app.queue.getResult(a!.id)).toMatchObject({ progress: 'half', logs: ['a', 'a2'] });
  });

  it('removes what a run reported with the run (dequeue is refused while leased; purge removes it)', async () => {
    const { app, run } = await leased();
    expect(await app.backend.report([{ ...run, progress: '1', lines: ['x'] }])).toEqual([true]);
    expect(await app.backend.purge('default')).toBe(1);
    await expect(app.queue.getResult(run.id)).rejects.toThrow(/not found|no run|never enqueued/i);
  });

  it('tells a waiter the progress and lines of a run it waits on, in order, then its result', async () => {
    const { app, run } = await leased();
    const progress: unknown[] = [];
    const logged: string[] = [];
    let heard!: () => void;
    const allHeard = new Promise<void>((resolve) => (heard = resolve));
    const waited = app.queue.waitFor(run.id, {
      timeoutMs: 10_000,
      onProgress: (value) => progress.push(value),
      onLog: (line) => {
        logged.push(line);
        if (line === 'three') heard();
      },
    });
    // The registration goes out within this turn of the event loop, ahead of the reports on the same connection.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await app.backend.report([{ ...run, progress: '{"step":1}', lines: ['one', 'two'] }])).toEqual([true]);
    expect(await app.backend.report([{ ...run, progress: '{"step":2}', lines: [] }])).toEqual([true]);
    expect(await app.backend.report([{ ...run, lines: ['three'] }])).toEqual([true]);
    // Settled only once the waiter heard all: a result the registration finds first ends the wait there.
    await allHeard;
    expect(progress).toEqual([{ step: 1 }, { step: 2 }]);
    expect(logged).toEqual(['one', 'two', 'three']);
    expect(await app.backend.acknowledge([{ ...run, outcome: SUCCESS }])).toEqual([true]);
    const result: TaskResult = await waited;
    expect(result).toMatchObject({
      status: TaskStatus.SUCCESSFUL,
      progress: { step: 2 },
      logs: ['one', 'two', 'three'],
    });
  });
});
