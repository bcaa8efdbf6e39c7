import { TaskResultNotFoundError, TaskStatus, type ThreadmillModuleOptions } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { Acknowledgement, LeasedRun, Outcome } from '../../../libs/threadmill/src/backend/task-backend.js';
import { KeptService, MathService } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const SUCCESS: Outcome = { kind: 'successful', returnValue: '2' };
const FAILURE: Outcome = {
  kind: 'failed',
  error: { errorClass: 'Error', message: 'boom', stack: 'Error: boom', attempt: 1 },
};
/** A TTL no test waits for. */
const LONG_MS = 60_000;
/** A TTL the tests wait for. */
const SHORT_MS = 400;

/** The acknowledgement of `run` with `outcome`, kept for `resultTtlMs` when its task says so. */
const ack = (run: LeasedRun, outcome: Outcome, resultTtlMs?: number): Acknowledgement => ({
  id: run.id,
  queue: run.queue,
  token: run.token,
  outcome,
  ...(resultTtlMs === undefined ? {} : { resultTtlMs }),
});

/** Enqueues `n` runs and leases them, in enqueue order. */
async function leased(app: Subject, n: number): Promise<LeasedRun[]> {
  // One partition key: one order, on a partitioned backend too.
  for (let i = 0; i < n; i++) await app.queue.enqueue(MathService, 'add', [i, i], { partitionKey: 'ttl' });
  const runs = await app.backend.claim(['default'], n, 'host:1:0', 0);
  expect(runs).toHaveLength(n);
  return runs;
}

/** Whether run `id` can still be read. */
async function kept(app: Subject, id: string): Promise<boolean> {
  return app.queue.getResult(id).then(
    () => true,
    (error: unknown) => {
      expect(error).toBeInstanceOf(TaskResultNotFoundError);
      return false;
    },
  );
}

/** The finished runs as counted and as listed, which must agree. */
async function finished(app: Subject): Promise<{ successful: string[]; failed: string[] }> {
  const [counts] = await app.inspector.counts(['default']);
  const successful = (await app.inspector.list('default', 'successful')).map((run) => run.id);
  const failed = (await app.inspector.list('default', 'failed')).map((run) => run.id);
  expect({ successful: counts!.successful, failed: counts!.failed }).toEqual({
    successful: successful.length,
    failed: failed.length,
  });
  return { successful: successful.sort(), failed: failed.sort() };
}

/** The ids of `runs`, sorted. */
const sorted = (...runs: LeasedRun[]) => runs.map((run) => run.id).sort();

// How long finished runs are kept: per outcome (module) and per task (what a worker acknowledges with).
describe.each(BACKENDS)('result TTL conformance: the $name backend', (backend) => {
  const apps: Subject[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function producer(options: ThreadmillModuleOptions): Promise<Subject> {
    const app = await backend.producer({ leaseTtlMs: 60_000, ...options });
    apps.push(app);
    return app;
  }

  it("keeps each finished run its own TTL, its outcome's or its task's, and removes it soon after with its index entry", async () => {
    const app = await producer({ resultTtlMs: { successful: SHORT_MS, failed: LONG_MS } });
    const [a, b, c, d] = await leased(app, 4);
    const sent = Date.now();
    expect(
      await app.backend.acknowledge([
        ack(a!, SUCCESS), // the module's, for a success: short
        ack(b!, FAILURE), // the module's, for a failure: long
        ack(c!, SUCCESS, LONG_MS), // its task's
        ack(d!, FAILURE, 2 * SHORT_MS), // its task's
      ]),
    ).toEqual([true, true, true, true]);
    const acknowledged = Date.now();
    expect(await finished(app)).toEqual({ successful: sorted(a!, c!), failed: sorted(b!, d!) });

    // Trims every 50 ms until both short-lived runs are gone, noting what each look found.
    const looks: { trimmedAt: number; seenAt: number; aKept: boolean; dKept: boolean }[] = [];
    for (let gone = false; !gone && Date.now() - sent < 20_000;) {
      await delay(50);
      const trimmedAt = Date.now();
      await app.backend.trim(['default']);
      const [aKept, dKept] = [await kept(app, a!.id), await kept(app, d!.id)];
      looks.push({ trimmedAt, seenAt: Date.now(), aKept, dKept });
      expect(await finished(app)).toEqual({
        successful: sorted(...(aKept ? [a!, c!] : [c!])),
        failed: sorted(...(dKept ? [b!, d!] : [b!])),
      });
      gone = !aKept && !dKept;
    }
    // Kept at least their TTL: a run seen gone had finished (after `sent`) more than its TTL before.
    expect(looks.filter((look) => !look.aKept && look.seenAt - sent <= SHORT_MS)).toEqual([]);
    expect(looks.filter((look) => !look.dKept && look.seenAt - sent <= 2 * SHORT_MS)).toEqual([]);
    // Removed by the first trim after their TTL: they had finished (before `acknowledged`) longer ago.
    expect(looks.filter((look) => look.aKept && look.trimmedAt - acknowledged > SHORT_MS + 10)).toEqual([]);
    expect(looks.filter((look) => look.dKept && look.trimmedAt - acknowledged > 2 * SHORT_MS + 10)).toEqual([]);
    expect(looks.at(-1)).toMatchObject({ aKept: false, dKept: false });
    expect(await app.queue.getResult(b!.id)).toMatchObject({ status: TaskStatus.FAILED });
    expect(await app.queue.getResult(c!.id)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 2 });
  });

  it("deletes at once a run whose TTL is 0, its outcome's or its task's, and keeps the others", async () => {
    const app = await producer({ resultTtlMs: { successful: 0 } });
    const [a, b, c, d] = await leased(app, 4);
    await app.backend.acknowledge([ack(a!, SUCCESS), ack(b!, SUCCESS, LONG_MS), ack(c!, FAILURE), ack(d!, FAILURE, 0)]);
    expect([a, b, c, d].map((run) => run!.id)).toEqual([a!.id, b!.id, c!.id, d!.id]);
    expect(await Promise.all([a, b, c, d].map((run) => kept(app, run!.id)))).toEqual([false, true, true, false]);
    expect(await finished(app)).toEqual({ successful: [b!.id], failed: [c!.id] });
  });

  it('lists finished runs of every TTL newest first, and requeues and purges them like the others', async () => {
    const app = await producer({ resultTtlMs: LONG_MS });
    const [a, b, c, d, e] = await leased(app, 5);
    // One call each, a few ms apart: distinct finish times.
    for (const [run, outcome, ttl] of [
      [a, SUCCESS, undefined],
      [b, SUCCESS, 2 * LONG_MS],
      [c, SUCCESS, undefined],
      [d, FAILURE, 2 * LONG_MS],
      [e, FAILURE, undefined],
    ] as const) {
      expect(await app.backend.acknowledge([ack(run!, outcome, ttl)])).toEqual([true]);
      await delay(5);
    }
    const listed = async (segment: 'successful' | 'failed', offset = 0, limit = 100) =>
      (await app.inspector.list('default', segment, { offset, limit })).map((run) => run.id);
    expect(await listed('successful')).toEqual([c!.id, b!.id, a!.id]);
    expect(await listed('successful', 1, 1)).toEqual([b!.id]);
    expect(await listed('failed')).toEqual([e!.id, d!.id]);

    // A failed run kept for its task's TTL goes back to READY, and no trim removes it after that TTL.
    expect(await app.backend.requeue(d!.id, 'default')).toEqual({ requeued: true, status: 'FAILED' });
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 1, failed: 1, successful: 3 });
    expect(await listed('failed')).toEqual([e!.id]);
    await app.backend.trim(['default']);
    expect(await app.queue.getResult(d!.id)).toMatchObject({ status: TaskStatus.READY });

    expect(await app.backend.purge('default')).toBe(5);
    expect((await app.inspector.counts(['default']))[0]).toMatchObject({ ready: 0, successful: 0, failed: 0 });
    expect(await Promise.all([a, b, c, d, e].map((run) => kept(app, run!.id)))).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('keeps the runs of a task with its own resultTtlMs, per outcome, when the module keeps none', async () => {
    const app = await backend.executing({ resultTtlMs: 0 });
    apps.push(app);
    const run = async (settled: Promise<{ id: string }>) => {
      const { id } = await settled;
      await app.queue.waitFor(id, { timeoutMs: 10_000 }).catch(() => undefined);
      return id;
    };
    const waitable = { waitable: true } as const;
    const plain = await run(app.queue.enqueue(MathService, 'add', [1, 2], waitable));
    const keptSuccess = await run(app.queue.enqueue(KeptService, 'keep', [7], waitable));
    const keptFailure = await run(app.queue.enqueue(KeptService, 'failuresKept', [true], waitable));
    const success = await run(app.queue.enqueue(KeptService, 'failuresKept', [false], waitable));
    expect(await kept(app, plain)).toBe(false);
    expect(await kept(app, success)).toBe(false);
    expect(await app.queue.getResult(keptSuccess)).toMatchObject({ status: TaskStatus.SUCCESSFUL, returnValue: 7 });
    expect(await app.queue.getResult(keptFailure)).toMatchObject({
      status: TaskStatus.FAILED,
      errors: [{ errorClass: 'FixtureError', message: 'failed, and kept' }],
    });
    expect(await finished(app)).toEqual({ successful: [keptSuccess], failed: [keptFailure] });
  });
});
