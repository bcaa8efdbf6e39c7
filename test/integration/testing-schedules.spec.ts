import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Task, TaskInspector, TaskScheduler } from '@threadmill/nestjs';
import { ThreadmillTesting, ThreadmillTestingModule } from '@threadmill/nestjs/testing';
import { afterEach, describe, expect, it } from 'vitest';

/** A task on a schedule declared in the code. */
@Injectable()
class DigestService {
  @Task({ name: 'digest.send', schedule: { everyMs: 60_000, args: ['daily'] } })
  send(kind: string): string {
    return `sent ${kind}`;
  }
}

@Module({ providers: [DigestService] })
class DigestModule {}

let module: TestingModule | undefined;
afterEach(async () => {
  await module?.close();
  module = undefined;
});

async function boot(mode: 'manual' | 'immediate') {
  module = await Test.createTestingModule({
    imports: [ThreadmillTestingModule.forRoot({ queues: ['default'], mode }), DigestModule],
  }).compile();
  module.useLogger(['error']);
  await module.init();
  return {
    testing: module.get(ThreadmillTesting),
    scheduler: module.get(TaskScheduler),
    inspector: module.get(TaskInspector),
  };
}

describe('schedules in ThreadmillTestingModule (no Redis)', () => {
  it('plans a code schedule at boot, and fires one run per slot as the testing clock passes them', async () => {
    const { testing, inspector } = await boot('immediate');
    const [planned] = await inspector.schedules();
    expect(planned).toMatchObject({ id: 'digest.send', source: 'code', runs: 0, args: ['daily'] });
    expect(planned!.nextRunAt!.getTime() % 60_000).toBe(0);

    await testing.advanceTime(60_000);
    const runs = testing.enqueued('digest.send');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'SUCCESSFUL', returnValue: 'sent daily' });
    expect(runs[0]!.id).toBe(`digest.send@${planned!.nextRunAt!.toISOString()}`);
    // Two more minutes: catch-up 'latest' fires one run, for the latest slot.
    await testing.advanceTime(120_000);
    expect(testing.enqueued('digest.send')).toHaveLength(2);
    expect(await inspector.schedules()).toMatchObject([{ runs: 2, skipped: 1 }]);
  });

  it('fires run-time schedules, and stops a removed one', async () => {
    const { testing, scheduler } = await boot('manual');
    await scheduler.upsert('weekly', { task: 'digest.send', args: ['weekly'], everyMs: 3_600_000, limit: 2 });
    await testing.runSchedules();
    await testing.advanceTime(3_600_000);
    expect(testing.enqueued('digest.send').filter((run) => run.args[0] === 'weekly')).toHaveLength(1);
    expect(await scheduler.remove('weekly')).toBe(true);
    await testing.advanceTime(3_600_000);
    expect(testing.enqueued('digest.send').filter((run) => run.args[0] === 'weekly')).toHaveLength(1);
  });
});
