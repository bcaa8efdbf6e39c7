import { TaskScheduler } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import { DUE_BATCH, ScheduleRunner } from '../../libs/threadmill/src/schedule/schedule-runner.js';
import { Harness } from '../support/harness.js';

setFlagsFromString('--expose-gc');
/** A full collection, from a context made after the flag: this worker did not start with `--expose-gc`. */
const collectGarbage = runInNewContext('gc') as () => void;

/** The heap in use after full collections (twice: the first may leave what finalizers free). */
function retainedHeap(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** Tenant schedules made at once, as `docs/schedules.md`'s one-schedule-per-tenant example makes them. */
const TENANTS = 2_000;
/**
 * Most heap a scheduler may keep per schedule it planned. It needs none (the
 * bound is the margin for what else a loaded test process allocates); each
 * kept a compiled cron expression of ~80 KB before.
 */
const MAX_RETAINED_PER_SCHEDULE = 5_000;

describe('many schedules', () => {
  let harness: Harness | undefined;
  afterEach(() => harness?.close());

  it('are planned a bounded batch a pass, after a due slot, and the scheduler keeps no state per schedule', async () => {
    harness = await Harness.start();
    const scheduler = harness.module.get(TaskScheduler);
    const store = harness.backend.schedules;
    const runner = new ScheduleRunner(store, { declarations: () => [], queues: [], firedBy: 'test:1:0' });

    // A probe schedule, planned, then due.
    await scheduler.upsert('0-probe', { task: 'MathService.add', args: [1, 2], everyMs: 200 });
    await runner.pass();
    const probe = () => store.list().then((all) => all.find((schedule) => schedule.id === '0-probe')!);
    const slot = Number((await probe()).next);
    while (Date.now() <= slot) await delay(Math.max(slot - Date.now() + 5, 1));

    for (let first = 0; first < TENANTS; first += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          scheduler.upsert(`nightly-tenant-${first + i}`, {
            task: 'MathService.add',
            args: [first + i, 0],
            cron: '0 3 * * *',
            tz: 'Europe/Berlin',
          }),
        ),
      );
    }
    const before = retainedHeap();

    // One pass: the due slot fires, and one batch of the new schedules is planned, not all of them.
    await runner.pass();
    // Its latest due slot (catch-up 'latest': more may have come due while the tenants were made).
    expect((await probe()).lastSlot).toBeGreaterThanOrEqual(slot);
    const toPlan = (await store.list()).filter((schedule) => schedule.next === '').length;
    expect(toPlan).toBeGreaterThanOrEqual(TENANTS - DUE_BATCH);
    expect(toPlan).toBeLessThan(TENANTS);

    for (let passes = 0; (await runner.pass()) === 0; passes++) expect(passes).toBeLessThan(TENANTS);
    const planned = await store.list();
    expect(planned.filter((schedule) => schedule.next === '')).toEqual([]);
    const retained = retainedHeap() - before;
    expect(retained / TENANTS).toBeLessThan(MAX_RETAINED_PER_SCHEDULE);
    // The runner is what is measured: kept alive to here.
    expect(runner).toBeDefined();
  });
});
