import { TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { NewRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

/**
 * How concurrent enqueues are grouped into script calls. The backend's store
 * stays the real one, against the test Redis; the test only records each
 * call's runs, and in one case holds a call back for a moment so that another
 * flush happens while it is in flight.
 */
describe('store pipelining', () => {
  let app: Harness;
  let calls: NewRun[][];
  let realStore: (runs: readonly NewRun[]) => ReturnType<Harness['backend']['store']>;
  let holdMs = 0;

  beforeAll(async () => {
    app = await Harness.start();
    realStore = app.backend.store.bind(app.backend);
    app.backend.store = async (runs) => {
      calls.push([...runs]);
      if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
      return realStore(runs);
    };
  });
  afterEach(() => {
    holdMs = 0;
  });
  afterAll(() => app.close());

  const enqueueAll = (count: number, first = 0): Promise<TaskResult[]> =>
    Promise.all(Array.from({ length: count }, (_, i) => app.queue.enqueue(MathService, 'add', [first + i, 1])));

  /** Every result is stored as READY with its own arguments. */
  const expectStored = async (results: TaskResult[], first = 0): Promise<void> => {
    const stored = await app.queue.getResults(results.map((r) => r.id));
    expect(stored.map((r) => r?.status)).toEqual(results.map(() => TaskStatus.READY));
    expect(stored.map((r) => r?.args)).toEqual(results.map((_, i) => [first + i, 1]));
  };

  it('sends a flush with nothing in flight as two calls of half the runs each, in caller order', async () => {
    calls = [];
    const results = await enqueueAll(64);
    expect(calls.map((c) => c.length)).toEqual([32, 32]);
    // The runs went out in the order the callers enqueued them.
    expect(calls.flat().map((run) => run.id)).toEqual(results.map((r) => r.id));
    await expectStored(results);
  });

  it('sends a flush whole while a call is in flight', async () => {
    calls = [];
    holdMs = 200;
    const early = enqueueAll(40);
    await nextTurn(); // the first flush has gone out, split, and is held
    expect(calls.map((c) => c.length)).toEqual([20, 20]);
    const late = enqueueAll(40, 40);
    const results = [...(await early), ...(await late)];
    expect(calls.map((c) => c.length)).toEqual([20, 20, 40]);
    await expectStored(results);
  });

  it('keeps small flushes in one call and never splits an enqueueMany', async () => {
    calls = [];
    const few = await enqueueAll(20);
    expect(calls.map((c) => c.length)).toEqual([20]);
    await expectStored(few);

    calls = [];
    const [many, ...singles] = await Promise.all([
      app.queue.enqueueMany(
        Array.from({ length: 100 }, (_, i) => ({ task: MathService, method: 'add', args: [i, 1] })),
      ),
      ...Array.from({ length: 10 }, (_, i) => app.queue.enqueue(MathService, 'add', [100 + i, 1])),
    ]);
    // Half of 110 runs would cut the enqueueMany: it goes whole, the singles after it.
    expect(calls.map((c) => c.length)).toEqual([100, 10]);
    await expectStored([...(many as TaskResult[]), ...(singles as TaskResult[])]);
  });
});
