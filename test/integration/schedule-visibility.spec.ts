import { TaskInspector, TaskScheduler, type ScheduleInfo } from '@threadmill/nestjs';
import type { DashboardSchedules } from '@threadmill/nestjs/dashboard';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueAlias } from '../support/backend.js';
import { call, DashboardTestbed } from '../support/dashboard.js';
import { waitUntil } from '../support/wait.js';

describe('schedules seen by operators', () => {
  const bed = new DashboardTestbed();
  afterEach(() => bed.closeAll());

  it('a worker fires a schedule, and the inspector and the dashboard show its next and last run', async () => {
    const alias = uniqueAlias('sched-view');
    const worker = await bed.startHarness({ options: { alias }, worker: { concurrency: 1 } });
    const scheduler = worker.module.get(TaskScheduler);
    await scheduler.upsert('sums', { task: 'MathService.add', args: [20, 22], everyMs: 200, overlap: 'skip' });
    const inspector = worker.module.get(TaskInspector);
    let seen: ScheduleInfo | undefined;
    await waitUntil('the schedule fired twice', async () => {
      [seen] = await inspector.schedules();
      return (seen?.runs ?? 0) >= 2;
    });
    expect(seen).toMatchObject({ id: 'sums', task: 'MathService.add', everyMs: 200, source: 'api', ended: false });
    expect(seen!.nextRunAt!.getTime()).toBeGreaterThan(seen!.lastRunAt!.getTime());
    expect(seen!.lastRunId).toMatch(/^sums@\d{4}-/);
    expect((await worker.queue.waitFor(seen!.lastRunId!)).returnValue).toBe(42);

    const { url } = await bed.startDashboard(alias);
    const { status, body } = await call<DashboardSchedules>(`${url}/api/schedules`);
    expect(status).toBe(200);
    expect(body.schedules).toHaveLength(1);
    expect(body.schedules[0]).toMatchObject({ id: 'sums', task: 'MathService.add', args: [20, 22] });
    expect(typeof body.schedules[0]!.nextRunAt).toBe('string');
    const page = await call<string>(url);
    expect(String(page.body)).toContain('id="schedules"');
  });
});
