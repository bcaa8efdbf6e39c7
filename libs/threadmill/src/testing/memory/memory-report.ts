import type { RunReport } from '../../backend/task-backend.js';
import { MAX_LOG_LINES } from '../../records/run-report-limits.js';
import { leaseHolds } from './memory-acknowledge.js';
import type { MemoryState } from './memory-state.js';

/**
 * Stores one attempt's report under its lease, as `lua/report.lua` does: the
 * latest progress JSON in `progress`, the lines appended to `logs` (joined by
 * newlines, the last `MAX_LOG_LINES` kept, their count in `logLines`), and an
 * entry for the run's waiters. Returns false, writing nothing, when the lease
 * no longer holds.
 */
export function applyReport(state: MemoryState, report: RunReport, now: number): boolean {
  const run = state.runs.get(report.id);
  if (!leaseHolds(run, report.token, now) || run.queue !== report.queue) return false;
  const fields = run.fields;
  if (report.progress !== undefined) fields['progress'] = report.progress;
  const sent = report.lines.slice(-MAX_LOG_LINES);
  if (sent.length > 0) {
    const kept = fields['logs'] === undefined ? [] : fields['logs'].split('\n');
    const lines = [...kept, ...sent].slice(-MAX_LOG_LINES);
    fields['logs'] = lines.join('\n');
    fields['logLines'] = String(lines.length);
  }
  const reported = report.progress === undefined ? { lines: sent } : { progress: report.progress, lines: sent };
  state.log.report(report.id, reported, now);
  return true;
}
