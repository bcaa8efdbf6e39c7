import { InvalidScheduleError, UnknownTaskError, type ScheduleInfo } from '@threadmill/nestjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScheduleFire } from '../../../libs/threadmill/src/backend/schedule-store.js';
import { slotRunId } from '../../../libs/threadmill/src/schedule/schedule-plan.js';
import { ScheduleRunner } from '../../../libs/threadmill/src/schedule/schedule-runner.js';
import { encodeSpec } from '../../../libs/threadmill/src/schedule/schedule-spec.js';
import { InMemoryTaskBackend } from '../../../libs/threadmill/src/testing/memory/in-memory.backend.js';
import { MathService } from '../../fixtures/fixture-tasks.js';
import { BACKENDS, type Subject } from './backends.js';

const OPTIONS = { queues: ['default', 'emails', 'reports'], maxPayloadBytes: 1_000_000 };

/** A pass of a scheduler of this test's own (no code declarations). */
const pass = (app: Subject) =>
  new ScheduleRunner(app.backend.schedules, { declarations: () => [], queues: [], firedBy: 'test:1:0' }).pass();

/** The schedule `id` as listed. */
async function listed(app: Subject, id: string): Promise<ScheduleInfo | undefined> {
  return (await app.scheduler.list()).find((schedule) => schedule.id === id);
}

/** The fire call of `id`'s stored next slot, as a scheduler would make it. */
async function fireOf(app: Subject, id: string, overrides: Partial<ScheduleFire> = {}): Promise<ScheduleFire> {
  const stored = (await app.backend.schedules.list()).find((schedule) => schedule.id === id)!;
  const slot = Number(stored.next);
  const spec = JSON.parse(stored.def!) as ReturnType<typeof encodeSpec>['spec'];
  return {
    id,
    digest: stored.digest!,
    next: stored.next,
    slot,
    runId: slotRunId(id, slot),
    following: slot + 1_000,
    skipped: 0,
    overlapSkip: spec.overlap === 'skip',
    limit: spec.limit ?? 0,
    queue: spec.queue,
    priority: spec.priority,
    leaseTtlMs: spec.leaseTtlMs,
    payload: spec.payload,
    firedBy: 'test:1:0',
    ...overrides,
  };
}

describe.each(BACKENDS)('conformance: schedules on the $name backend', (backend) => {
  let app: Subject;
  afterEach(() => app?.close());

  it('refuses a bad schedule with a typed error naming the problem, and stores nothing', async () => {
    app = await backend.producer();
    const add = 'MathService.add';
    const cases: [object, RegExp][] = [
      [{ task: add, cron: 'not a cron' }, /not a valid cron expression/],
      [{ task: add, cron: '* * * * *', everyMs: 1000 }, /either cron or everyMs, not both/],
      [{ task: add, args: [1, 2] }, /neither was given/],
      [{ task: add, everyMs: 50 }, /everyMs must be an integer of at least 100/],
      [{ task: add, cron: '* * * * *', tz: 'Mars/Olympus' }, /not an IANA time zone/],
      [{ task: add, everyMs: 1000, startAt: new Date(2_000), endAt: new Date(1_000) }, /endAt is before startAt/],
      [{ task: add, everyMs: 1000, args: ['x', 'y'] }, /arguments|expects/],
    ];
    for (const [options, problem] of cases) {
      const error = await app.scheduler.upsert('bad', options as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(options)).toBeInstanceOf(InvalidScheduleError);
      expect((error as Error).message).toMatch(problem);
    }
    await expect(app.scheduler.upsert('bad', { task: 'no.such.task', everyMs: 1000 })).rejects.toBeInstanceOf(
      UnknownTaskError,
    );
    await expect(app.scheduler.upsert('bad id!', { task: add, everyMs: 1000 })).rejects.toThrow(/the id must be/);
    expect(await app.scheduler.list()).toEqual([]);
  });

  it('stores a schedule once, plans its next slot, and replaces it only when its definition changes', async () => {
    app = await backend.producer();
    expect(await app.scheduler.upsert('sum', { task: 'MathService.add', args: [1, 2], everyMs: 60_000 })).toBe(
      'created',
    );
    expect(await app.scheduler.upsert('sum', { task: 'MathService.add', args: [1, 2], everyMs: 60_000 })).toBe(
      'unchanged',
    );
    expect(await listed(app, 'sum')).toMatchObject({ nextRunAt: null, runs: 0, source: 'api', args: [1, 2] });
    await pass(app);
    const planned = (await listed(app, 'sum'))!;
    expect(planned.nextRunAt!.getTime() % 60_000).toBe(0);
    expect(planned.nextRunAt!.getTime()).toBeGreaterThan(Date.now() - 1_000);
    expect(await app.scheduler.upsert('sum', { task: 'MathService.add', args: [2, 2], everyMs: 60_000 })).toBe(
      'replaced',
    );
    expect(await listed(app, 'sum')).toMatchObject({ nextRunAt: null, args: [2, 2] });
    expect(await app.scheduler.remove('sum')).toBe(true);
    expect(await app.scheduler.remove('sum')).toBe(false);
    expect(await app.scheduler.list()).toEqual([]);
  });

  it('fires a slot once when two schedulers fire it together, and records it', async () => {
    app = await backend.producer();
    await app.scheduler.upsert('sum', { task: 'MathService.add', args: [3, 4], everyMs: 1_000 });
    await pass(app);
    const fire = await fireOf(app, 'sum');
    const outcomes = await Promise.all([app.backend.schedules.fire(fire), app.backend.schedules.fire(fire)]);
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(['fired', 'moved']);
    const run = await app.queue.getResult(fire.runId);
    expect(run).toMatchObject({ taskName: 'MathService.add', args: [3, 4], status: 'READY' });
    expect(await listed(app, 'sum')).toMatchObject({
      runs: 1,
      lastRunId: fire.runId,
      lastRunAt: new Date(fire.slot!),
      nextRunAt: new Date(fire.slot! + 1_000),
      lastFiredBy: 'test:1:0',
    });
    // A stale call (the slot moved on) writes nothing.
    expect((await app.backend.schedules.fire(fire)).outcome).toBe('moved');
    expect((await app.inspector.counts(['default']))[0]!.ready).toBe(1);
  });

  it("skips a slot with overlap 'skip' while the previous run is pending, and ends at its limit", async () => {
    app = await backend.producer();
    await app.scheduler.upsert('once', {
      task: 'MathService.add',
      args: [1, 1],
      everyMs: 1_000,
      overlap: 'skip',
      limit: 2,
    });
    await pass(app);
    expect((await app.backend.schedules.fire(await fireOf(app, 'once'))).outcome).toBe('fired');
    expect((await app.backend.schedules.fire(await fireOf(app, 'once'))).outcome).toBe('overlap');
    expect(await listed(app, 'once')).toMatchObject({ runs: 1, skipped: 1 });
    // The previous run settles: the next slot fires, the last the limit allows.
    const [leased] = await app.backend.claim(['default'], 1, 'test:1:0', 0);
    await app.backend.acknowledge([
      { id: leased!.id, queue: 'default', token: leased!.token, outcome: { kind: 'successful', returnValue: '2' } },
    ]);
    expect((await app.backend.schedules.fire(await fireOf(app, 'once'))).outcome).toBe('fired');
    expect(await listed(app, 'once')).toMatchObject({ runs: 2, ended: true, nextRunAt: null });
    // An ended schedule plans nothing: the broker may sleep.
    expect(await pass(app)).toBeNull();
    expect((await listed(app, 'once'))!.runs).toBe(2);
  });

  it("after slots were missed, catches up every one with 'all' and the latest with 'latest'", async () => {
    app = await backend.producer();
    for (const catchUp of ['all', 'latest'] as const) {
      await app.scheduler.upsert(catchUp, { task: 'MathService.add', args: [1, 1], everyMs: 1_000, catchUp });
    }
    await pass(app);
    const planned = (await listed(app, 'all'))!.nextRunAt!.getTime();
    // No scheduler runs for three and a half slots.
    await elapse(app, planned + 3_500 - (await app.backend.schedules.due(0)).now);
    await pass(app);
    const all = (await listed(app, 'all'))!;
    const latest = (await listed(app, 'latest'))!;
    // Four slots came due (more on a slow machine): 'all' fired each, 'latest' the last alone.
    const missed = all.runs;
    expect(missed).toBeGreaterThanOrEqual(4);
    expect({ runs: all.runs, skipped: all.skipped }).toEqual({ runs: missed, skipped: 0 });
    expect({ runs: latest.runs, skipped: latest.skipped }).toEqual({ runs: 1, skipped: missed - 1 });
    expect(all.lastRunAt).toEqual(latest.lastRunAt);
    const ids = (await app.inspector.list('default', 'ready')).map((run) => run.id).sort();
    const slots = Array.from({ length: missed }, (_, i) => planned + i * 1_000);
    expect(ids).toEqual(
      slots
        .map((slot) => slotRunId('all', slot))
        .concat(slotRunId('latest', slots.at(-1)!))
        .sort(),
    );
  });

  it('keeps the code form first declared last in force, and stops a schedule its newest code drops', async () => {
    app = await backend.producer();
    const store = app.backend.schedules;
    const form = (args: number[]) => {
      const { spec, def, digest } = encodeSpec('code-sum', { everyMs: 1_000 }, args, definitionOfAdd(app), OPTIONS);
      return { id: 'code-sum', def, digest, queue: spec.queue };
    };
    const [v1, v2] = [form([1, 1]), form([2, 2])];
    await store.declare([v1], ['default'], 300_000);
    expect((await listed(app, 'code-sum'))!.args).toEqual([1, 1]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.declare([v2], ['default'], 300_000);
    expect((await listed(app, 'code-sum'))!.args).toEqual([2, 2]);
    // The older version declaring again (a restart during the rollout) does not flip it back.
    await store.declare([v1], ['default'], 300_000);
    expect(await listed(app, 'code-sum')).toMatchObject({ args: [2, 2], source: 'code' });
    // A process of another queue set leaves it alone; a newer one without it stops it.
    await store.declare([], ['reports'], 300_000);
    expect(await listed(app, 'code-sum')).toBeDefined();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.declare([], ['default'], 300_000);
    expect(await listed(app, 'code-sum')).toBeUndefined();
    // A run-time schedule of the same id is never touched by declarations.
    await app.scheduler.upsert('api-sum', { task: 'MathService.add', args: [5, 5], everyMs: 1_000 });
    expect(await store.declare([{ ...v1, id: 'api-sum' }], ['default'], 300_000)).toEqual(['api-sum']);
    expect(await listed(app, 'api-sum')).toMatchObject({ args: [5, 5], source: 'api' });
  });
});

/** Lets `ms` pass on the backend's clock: the testing clock moves, Redis's is waited for. */
async function elapse(app: Subject, ms: number): Promise<void> {
  if (app.backend instanceof InMemoryTaskBackend) app.backend.clock.advance(Math.max(ms, 0));
  else await new Promise((resolve) => setTimeout(resolve, Math.max(ms, 0)));
}

/** What a schedule of `MathService.add` is built from. */
function definitionOfAdd(app: Subject) {
  return app.registry.getByMethod(MathService, 'add');
}
