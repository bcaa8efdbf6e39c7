import {
  InvalidEnqueueError,
  TaskResultNotFoundError,
  TaskStatus,
  UnknownTaskError,
  type TaskResult,
} from '@threadmill/nestjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EchoService, MathService } from '../fixtures/fixture-tasks.js';
import { Harness } from '../support/harness.js';

describe('enqueue and execute', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start({ worker: { concurrency: 4 } });
  });
  afterAll(() => app.close());

  it('runs a typed enqueue to a SUCCESSFUL result with its return value', async () => {
    const enqueued = await app.queue.enqueue(MathService, 'add', [2, 3]);
    expect(enqueued).toMatchObject({
      taskName: 'MathService.add',
      queue: 'default',
      priority: 0,
      status: TaskStatus.READY,
      attempts: 0,
    });
    expect(enqueued.args).toEqual([2, 3]);

    const result = await app.waitFor(enqueued.id);
    expect(result.status).toBe(TaskStatus.SUCCESSFUL);
    expect(result.returnValue).toBe(5);
    expect(result.attempts).toBe(1);
    expect(result.workerIds).toHaveLength(1);
    expect(result.workerIds[0]).toMatch(/^.+:\d+:0$/);
    expect(result.errors).toEqual([]);
    expect(result.startedAt!.getTime()).toBeGreaterThanOrEqual(result.enqueuedAt.getTime());
    expect(result.finishedAt!.getTime()).toBeGreaterThanOrEqual(result.startedAt!.getTime());
    expect(result.lastAttemptedAt).toEqual(result.startedAt);
  });

  it('runs a by-name enqueue, on the queue the task declares', async () => {
    const enqueued = await app.queue.enqueue('math.multiply', [6, 7]);
    expect(enqueued.queue).toBe('reports');
    const result = await app.waitFor(enqueued.id);
    expect(result.returnValue).toBe(42);
  });

  it('enqueues many runs in one call, by name and by class, with per-item options', async () => {
    const results = await app.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1] },
      { task: MathService, method: 'add', args: [2, 2], priority: 10 },
      { task: 'math.multiply', args: [3, 3], queue: 'default' },
    ]);
    expect(results.map((r) => r.taskName)).toEqual(['MathService.add', 'MathService.add', 'math.multiply']);
    expect(results[1]!.priority).toBe(10);
    expect(results[2]!.queue).toBe('default');
    const finished = await Promise.all(results.map((r) => app.waitFor(r.id)));
    expect(finished.map((r) => r.returnValue)).toEqual([2, 4, 9]);
  });

  it('defers a run by up to 100 years, its due time exact', async () => {
    const longest = 100 * 365 * 24 * 3_600_000;
    const run = await app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: longest });
    const stored = await app.queue.getResult(run.id);
    expect(stored.status).toBe(TaskStatus.READY);
    expect(stored.runAfter!.getTime() - stored.enqueuedAt.getTime()).toBe(longest);
    expect((await app.queue.counts(['default']))[0]).toMatchObject({ deferred: 1 });
    await app.backend.dequeue(run.id, 'default');
  });

  it('stores each run of one enqueueMany with its own options (priority, delay, caller id)', async () => {
    const id = `mixed-${Date.now()}`;
    const runs = await app.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1], priority: 5 },
      { task: 'MathService.add', args: [2, 2], delayMs: 60_000 },
      { task: 'MathService.add', args: [3, 3], id },
      { task: 'MathService.add', args: [4, 4] },
    ]);
    expect(runs[2]!.id).toBe(id);
    const stored = (await app.queue.getResults(runs.map((r) => r.id))).map((r) => r!);
    expect(stored.map((r) => r.priority)).toEqual([5, 0, 0, 0]);
    // Only the second run is deferred: its options did not leak to the others.
    expect(stored.map((r) => r.runAfter !== null)).toEqual([false, true, false, false]);
    expect(stored[1]!.runAfter!.getTime()).toBeGreaterThan(Date.now() + 50_000);
    const done = await Promise.all([0, 2, 3].map((i) => app.waitFor(runs[i]!.id)));
    expect(done.map((r) => r.returnValue)).toEqual([2, 6, 8]);
    expect((await app.queue.getResult(runs[1]!.id)).status).toBe(TaskStatus.READY);
  });

  it('stores one run for an id enqueued twice and returns the stored run the second time', async () => {
    const id = `order-${Date.now()}`;
    const stats = `threadmill:{${app.alias}}:q:default:stats`;
    const enqueuedBefore = Number((await app.backend.connections.client.hget(stats, 'enqueued')) ?? 0);
    const first = await app.queue.enqueue(MathService, 'add', [1, 2], { id });
    const second = await app.queue.enqueue(MathService, 'add', [100, 200], { id });
    expect(second.id).toBe(id);
    expect(second.args).toEqual([1, 2]);
    expect(second.enqueuedAt).toEqual(first.enqueuedAt);
    const result = await app.waitFor(id);
    expect(result.returnValue).toBe(3);
    expect(result.attempts).toBe(1);
    expect(Number(await app.backend.connections.client.hget(stats, 'enqueued'))).toBe(enqueuedBefore + 1);
  });

  it('runs caller-chosen ids that hold a newline or a pipe beside generated ones', async () => {
    // A claim joins the ids and records of first attempts with newlines: an id
    // holding one travels on its own, and the batch keeps its order.
    const odd = [`line\nbreak-${Date.now()}`, `pipe|${Date.now()}`];
    const runs = await app.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1] },
      { task: 'MathService.add', args: [2, 2], id: odd[0] },
      { task: 'MathService.add', args: [3, 3] },
      { task: 'MathService.add', args: [4, 4], id: odd[1] },
    ]);
    expect(runs.slice(1, 4).map((r) => r.id)).toEqual([odd[0], runs[2]!.id, odd[1]]);
    const done = await Promise.all(runs.map((r) => app.waitFor(r.id)));
    expect(done.map((r) => [r.id, r.returnValue])).toEqual([
      [runs[0]!.id, 2],
      [odd[0], 4],
      [runs[2]!.id, 6],
      [odd[1], 8],
    ]);
  });

  it('finds the runs that existed at their own positions, however their runs travel', async () => {
    // Runs of one option set whose ids have one byte length travel as a group,
    // cut by that length. Ids of one JavaScript length but different byte
    // lengths ('a' and 'é') must not share a group, and the script must keep
    // the call's positions across every group (storage.spec covers a payload
    // with a newline, which travels on its own).
    const stamp = Date.now();
    const plain = `existing-a-${stamp}`;
    const accented = `existing-é-${stamp}`;
    const odd = `existing\nnewline-${stamp}`;
    await app.queue.enqueueMany([
      { task: 'MathService.add', args: [1, 1], id: plain },
      { task: 'MathService.add', args: [2, 2], id: odd },
      { task: 'MathService.add', args: [3, 3], id: accented },
    ]);
    const runs = await app.queue.enqueueMany([
      { task: 'MathService.add', args: [5, 5] },
      { task: 'MathService.add', args: [9, 9], id: odd },
      { task: 'MathService.add', args: [9, 9], id: plain },
      { task: 'MathService.add', args: [9, 9], id: accented },
      { task: 'MathService.add', args: [7, 7], id: `new-a-${stamp}` },
      { task: 'MathService.add', args: [8, 8], id: `new-é-${stamp}` },
      { task: 'MathService.add', args: [6, 6] },
    ]);
    // The existing runs come back as stored, the new ones as given.
    expect(runs.map((r) => r.args)).toEqual([
      [5, 5],
      [2, 2],
      [1, 1],
      [3, 3],
      [7, 7],
      [8, 8],
      [6, 6],
    ]);
    expect(runs.slice(4, 6).map((r) => r.id)).toEqual([`new-a-${stamp}`, `new-é-${stamp}`]);
    const done = await Promise.all(runs.map((r) => app.waitFor(r.id)));
    expect(done.map((r) => r.returnValue)).toEqual([10, 4, 2, 6, 14, 16, 12]);
  });

  it('coalesces concurrent enqueues into shared script calls, each keeping its own result', async () => {
    const id = `shared-${Date.now()}`;
    const results = await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => app.queue.enqueue(MathService, 'add', [i, 1])),
      app.queue.enqueue(MathService, 'add', [100, 1], { id }),
      app.queue.enqueue(MathService, 'add', [200, 1], { id }),
      app.queue.enqueueMany([
        { task: 'MathService.add', args: [1000, 1] },
        { task: 'MathService.add', args: [2000, 1] },
      ]),
    ]);
    const singles = results.slice(0, 20) as TaskResult[];
    expect(singles.map((r) => r.args)).toEqual(Array.from({ length: 20 }, (_, i) => [i, 1]));
    // Both callers of one id get the one run that was stored.
    const [first, second] = results.slice(20, 22) as TaskResult[];
    expect(second!.id).toBe(id);
    expect(second!.args).toEqual(first!.args);
    const many = results[22] as TaskResult[];
    expect(many.map((r) => r.args)).toEqual([
      [1000, 1],
      [2000, 1],
    ]);
    const done = await Promise.all([...singles, first!, ...many].map((r) => app.waitFor(r.id)));
    expect(done.map((r) => r.returnValue)).toEqual([
      ...Array.from({ length: 20 }, (_, i) => i + 1),
      (first!.args[0] as number) + 1,
      1001,
      2001,
    ]);
  });

  it('rejects only the bad call among concurrent enqueues', async () => {
    const [good, bad] = await Promise.allSettled([
      app.queue.enqueue(MathService, 'add', [1, 1]),
      app.queue.enqueue(MathService, 'add', [1, 1], { priority: 1000 }),
    ]);
    expect(good.status).toBe('fulfilled');
    expect(bad.status).toBe('rejected');
    expect(((bad as PromiseRejectedResult).reason as Error).message).toMatch(/priority must be an integer/);
  });

  it('passes the TaskContext (attempt, id, signal) to a method that declares it', async () => {
    const enqueued = await app.queue.enqueue(EchoService, 'context', ['hello']);
    const result = await app.waitFor(enqueued.id);
    expect(result.returnValue).toEqual({ tag: 'hello', attempt: 1, id: enqueued.id, aborted: false });
    expect(result.args).toEqual(['hello']);
  });

  it('round-trips Dates, nested objects and unicode through arguments and return values', async () => {
    const value = { when: new Date('2026-01-02T03:04:05.678Z'), nested: [{ n: 1.5, s: 'żółw 🐢' }], nothing: null };
    const enqueued = await app.queue.enqueue(EchoService, 'echo', [value]);
    expect(enqueued.args[0]).toEqual(value);
    const result = await app.waitFor(enqueued.id);
    expect(result.returnValue).toEqual(value);
    expect((result.returnValue as typeof value).when).toBeInstanceOf(Date);
    expect((result.args[0] as typeof value).when).toBeInstanceOf(Date);
  });

  it('answers getResult of an unknown id with TaskResultNotFoundError', async () => {
    await expect(app.queue.getResult('no-such-run')).rejects.toThrow(TaskResultNotFoundError);
    await expect(app.queue.getResult('no-such-run')).rejects.toThrow(/No task run with id "no-such-run"/);
    expect(await app.queue.getResults(['no-such-run'])).toEqual([null]);
  });
});

describe('bad enqueue input', () => {
  let app: Harness;
  beforeAll(async () => {
    app = await Harness.start();
  });
  afterAll(() => app.close());

  const keysOf = async () => (await app.backend.connections.client.keys(`threadmill:{${app.alias}}:*`)).sort();

  it.each([
    [
      "another application's task in an undeclared queue",
      () => app.queue.enqueue('Nope.nothing', [], { queue: 'nope' }),
      InvalidEnqueueError,
      /queue "nope" is not one of the module's queues .*this application does not register the task/,
    ],
    [
      'a class method that is no task',
      () => app.queue.enqueue(MathService, 'notATask' as 'add', [1, 2]),
      UnknownTaskError,
      /Unknown task "MathService#notATask"/,
    ],
    [
      'a priority out of range',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { priority: 101 }),
      InvalidEnqueueError,
      /priority must be an integer from -100 to 100, got 101/,
    ],
    [
      'a negative delay',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: -5 }),
      InvalidEnqueueError,
      /delayMs must be a finite number >= 0, got -5/,
    ],
    [
      // A delay past what a due time can hold once threw a raw RangeError after storing the run.
      'a delay of 9.3e18 ms',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 9.3e18 }),
      InvalidEnqueueError,
      /delayMs must be at most 3153600000000 \(100 years\), got 9300000000000000000/,
    ],
    [
      'a delay of 9.2e18 ms',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 9.2e18 }),
      InvalidEnqueueError,
      /delayMs must be at most/,
    ],
    [
      'a delay just over 100 years',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 100 * 365 * 24 * 3_600_000 + 1 }),
      InvalidEnqueueError,
      /delayMs must be at most/,
    ],
    [
      'a runAfter more than 100 years ahead',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { runAfter: new Date(8.64e15) }),
      InvalidEnqueueError,
      /runAfter must be at most 100 years from now, got Date\(\+275760-09-13T00:00:00\.000Z\)/,
    ],
    [
      'a huge delay in one item of enqueueMany',
      () =>
        app.queue.enqueueMany([
          { task: 'MathService.add', args: [1, 2] },
          { task: 'MathService.add', args: [1, 2], delayMs: 1e300 },
        ]),
      InvalidEnqueueError,
      /MathService\.add \(item 1\).*delayMs must be at most/,
    ],
    [
      'an id that is not a string',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { id: 42 as unknown as string }),
      InvalidEnqueueError,
      /id must be a string/,
    ],
    [
      'an undeclared queue',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { queue: 'nope' }),
      InvalidEnqueueError,
      /queue "nope" is not one of the module's queues/,
    ],
    [
      'runAfter with delayMs',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { delayMs: 1, runAfter: new Date() }),
      InvalidEnqueueError,
      /either runAfter or delayMs/,
    ],
    [
      'an invalid runAfter',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { runAfter: new Date('nope') }),
      InvalidEnqueueError,
      /runAfter must be a valid Date/,
    ],
    [
      'args that are not an array',
      () => app.queue.enqueue('MathService.add', 'x' as unknown as unknown[]),
      InvalidEnqueueError,
      /args must be an array/,
    ],
    [
      'a function argument',
      () => app.queue.enqueue(EchoService, 'echo', [() => 1]),
      InvalidEnqueueError,
      /args\[0\] is a function/,
    ],
    [
      'a BigInt argument',
      () => app.queue.enqueue(EchoService, 'echo', [10n]),
      InvalidEnqueueError,
      /args\[0\] is a BigInt/,
    ],
    [
      'undefined inside an array',
      () => app.queue.enqueue(EchoService, 'echo', [[1, undefined]]),
      InvalidEnqueueError,
      /args\[0\]\[1\] is undefined inside an array/,
    ],
    [
      'a Map argument',
      () => app.queue.enqueue(EchoService, 'echo', [new Map()]),
      InvalidEnqueueError,
      /args\[0\] is a Map/,
    ],
    [
      'an unknown option',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { prority: 1 } as never),
      InvalidEnqueueError,
      /unknown option "prority"/,
    ],
    [
      // An option may not replace what the call names: the task, method or arguments.
      'an option named task',
      () => app.queue.enqueue('MathService.add', [1, 2], { task: 'EchoService.echo' } as never),
      InvalidEnqueueError,
      /MathService\.add.*unknown option "task"/,
    ],
    [
      'an option named args',
      () => app.queue.enqueue(MathService, 'add', [1, 2], { args: [3, 4] } as never),
      InvalidEnqueueError,
      /MathService\.add.*unknown option "args"/,
    ],
    [
      'an option named method',
      () => app.queue.enqueue('MathService.add', [1, 2], { method: 'echo' } as never),
      InvalidEnqueueError,
      /unknown option "method"/,
    ],
  ])('refuses %s with a typed error and writes nothing', async (_label, enqueue, type, message) => {
    const before = await keysOf();
    const error = await enqueue().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toMatch(message);
    expect(await keysOf()).toEqual(before);
  });

  it('refuses a cyclic argument', async () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    await expect(app.queue.enqueue(EchoService, 'echo', [cyclic])).rejects.toThrow(
      /args\[0\]\.self refers back to an enclosing object/,
    );
  });

  it('stores nothing from an enqueueMany with one bad item', async () => {
    const before = await keysOf();
    await expect(
      app.queue.enqueueMany([
        { task: 'MathService.add', args: [1, 2] },
        { task: 'MathService.add', args: [1, 2], priority: 1000 },
      ]),
    ).rejects.toThrow(/MathService\.add \(item 1\).*priority/);
    expect(await keysOf()).toEqual(before);
  });
});
