import type { StoredSchedule } from '../backend/schedule-store.js';
import { decodeRunPayload } from '../codec/run-payload.js';
import type { ScheduleInfo } from '../records/schedule-options.interface.js';
import type { ScheduleSpec } from './schedule-spec.js';

const date = (ms: number | null) => (ms === null ? null : new Date(ms));

/** What a stored schedule reports (`TaskScheduler.list`, `TaskInspector.schedules`). */
export function scheduleInfo(stored: StoredSchedule): ScheduleInfo {
  const spec = JSON.parse(stored.def!) as ScheduleSpec;
  let args: unknown[] = [];
  try {
    args = decodeRunPayload(spec.payload).args as unknown[];
  } catch {
    // A payload this version cannot read still shows its schedule.
  }
  const planned = stored.next !== '' && stored.next !== 'end';
  return {
    id: stored.id,
    task: spec.task,
    queue: spec.queue,
    source: stored.source,
    cron: spec.cron,
    everyMs: spec.everyMs,
    tz: spec.tz,
    args,
    overlap: spec.overlap,
    catchUp: spec.catchUp,
    startAt: date(spec.startAt),
    endAt: date(spec.endAt),
    limit: spec.limit,
    nextRunAt: planned ? new Date(Number(stored.next)) : null,
    ended: stored.next === 'end',
    lastRunAt: date(stored.lastSlot),
    lastRunId: stored.lastRun,
    lastFiredBy: stored.lastBy,
    runs: stored.runs,
    skipped: stored.skipped,
  };
}
