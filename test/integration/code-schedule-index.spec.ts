import { TaskScheduler } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScheduleDeclaration } from '../../libs/threadmill/src/backend/schedule-store.js';
import { ScheduleRunner } from '../../libs/threadmill/src/schedule/schedule-runner.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

/** A declaration of schedule `id` with a valid definition (that of a run-time schedule made for the purpose). */
async function declaration(app: Harness, id: string): Promise<ScheduleDeclaration> {
  await app.module
    .get(TaskScheduler)
    .upsert(`template-of-${id}`, { task: 'MathService.add', args: [1, 2], everyMs: 200 });
  const template = (await app.backend.schedules.list()).find((schedule) => schedule.id === `template-of-${id}`)!;
  await app.module.get(TaskScheduler).remove(`template-of-${id}`);
  return { id, digest: template.digest!, def: template.def!, queue: 'default' };
}

/**
 * A declaration looks through the index of code schedules (`code-schedules`),
 * never through every schedule: these check that the index finds every code
 * schedule a declaration must stop, those stored before it existed included.
 */
describe('the index of code schedules', () => {
  let harness: Harness | undefined;
  afterEach(() => harness?.close());

  it('stops a code schedule its code no longer holds, found through the index, which holds no run-time schedule', async () => {
    const app = (harness = await Harness.start());
    const store = app.backend.schedules;
    const nightly = await declaration(app, 'nightly');
    await store.declare([nightly], ['default'], 300_000);
    const client = app.backend.connections.client;
    const index = `threadmill:{${app.alias}}:code-schedules`;
    expect(await client.smembers(index)).toEqual(['nightly']);
    // A run-time schedule never enters the index.
    await app.module.get(TaskScheduler).upsert('tenant-1', { task: 'MathService.add', args: [1, 1], everyMs: 1_000 });
    expect(await client.smembers(index)).toEqual(['nightly']);

    // The next version's code holds no schedule: its declaration stops it (no slot is due any more); it stays in
    // the index until its last form is dropped as stale and its keys are deleted, by a declaration that finds it there.
    await store.declare([], ['default'], 300_000);
    expect(await client.zscore(`threadmill:{${app.alias}}:schedules`, 'nightly')).toBe('inf');
    expect(await client.smembers(index)).toEqual(['nightly']);
    await store.declare([], ['default'], 0);
    expect(await client.exists(`threadmill:{${app.alias}}:schedule:nightly`)).toBe(0);
    expect(await client.smembers(index)).toEqual([]);
  });

  it('finds a code schedule stored before the index existed once it fires, and the declaration then stops it', async () => {
    const app = (harness = await Harness.start());
    const store = app.backend.schedules;
    const client = app.backend.connections.client;
    const index = `threadmill:{${app.alias}}:code-schedules`;
    await store.declare([await declaration(app, 'legacy')], ['default'], 300_000);
    // As a version before the index left it: the schedule, and no index entry.
    await client.del(index);
    const runner = new ScheduleRunner(store, { declarations: () => [], queues: [], firedBy: 'test:1:0' });
    const fired = async () => (await store.list()).find((schedule) => schedule.id === 'legacy')!.runs;
    await waitUntil(
      'the legacy code schedule fires',
      async () => {
        await runner.pass();
        return (await fired()) > 0;
      },
      30_000,
    );
    expect(await client.smembers(index)).toEqual(['legacy']);

    await store.declare([], ['default'], 300_000);
    expect(await client.zscore(`threadmill:{${app.alias}}:schedules`, 'legacy')).toBe('inf');
    // Stopped: no slot of it fires any more.
    const runs = await client.hget(`threadmill:{${app.alias}}:schedule:legacy`, 'runs');
    for (let i = 0; i < 3; i++) {
      await delay(250);
      await runner.pass();
    }
    expect(await client.hget(`threadmill:{${app.alias}}:schedule:legacy`, 'runs')).toBe(runs);
  });
});
