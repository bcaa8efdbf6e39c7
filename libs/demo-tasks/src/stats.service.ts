import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';

/**
 * A scheduled task of the worker app: every 5 s, whichever worker process
 * gets there first fires one run (docs/schedules.md), and the dashboard lists
 * it under Schedules with its next and last run. Only `DemoWorkerModule`
 * provides it: its queue, `maintenance`, is the demo backend's own.
 */
@Injectable()
export class StatsService {
  @Task({ name: 'stats.refresh', queue: 'maintenance', schedule: { everyMs: 5_000, overlap: 'skip' } })
  refresh(): { refreshedAt: string } {
    return { refreshedAt: new Date().toISOString() };
  }
}
