import { Injectable } from '@nestjs/common';
import { Task } from '@threadmill/nestjs';
import { createHash } from 'node:crypto';
import { GenerateReport } from './contracts.js';

/** Builds reports; the demo defers these to run a little later. */
@Injectable()
export class ReportService {
  /**
   * A scheduled task: every 5 s, whichever worker process gets there first
   * fires one run (docs/schedules.md), and the dashboard lists it under
   * Schedules with its next and last run.
   */
  @Task({ name: 'reports.refreshStats', queue: 'maintenance', schedule: { everyMs: 5_000, overlap: 'skip' } })
  refreshStats(): { refreshedAt: string } {
    return { refreshedAt: new Date().toISOString() };
  }

  @Task(GenerateReport)
  generate(reportId: string, rows: number): { reportId: string; digest: string } {
    const hash = createHash('sha256');
    for (let i = 0; i < rows; i++) hash.update(`${reportId}:${i}`);
    return { reportId, digest: hash.digest('hex').slice(0, 16) };
  }
}
