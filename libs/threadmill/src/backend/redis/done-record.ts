import type { StoredRun } from '../task-backend.js';
import { freshRunFields } from './fresh-record.js';

/**
 * The run fields of a done record, a run that succeeded in the attempt that
 * took it from its fresh record, as the `done` hash stores it:
 * `finishedAt|+claimedFor|attempt|workerLength|resultLength|<worker><result><fresh record>`,
 * claimedFor being finishedAt - claimedAt in ms and worker the body of its
 * JSON string, unquoted (a layout-3 record holds claimedAt itself, with no
 * '+', and its worker quoted; see `lua/includes/done.lua`, whose `doneFields`
 * answers the same fields).
 * Worker and result are cut by their lengths, which count bytes: both are
 * JSON, which may hold '|' and characters of several bytes.
 */
export function doneRunFields(record: string): StoredRun {
  const parts = record.split('|', 5);
  const at = parts.reduce((length, part) => length + part.length + 1, 0);
  const [finishedAt, claimed, attempt, workerLength, resultLength] = parts as [string, string, string, string, string];
  const relative = claimed.startsWith('+');
  const claimedAt = relative ? String(Number(finishedAt) - Number(claimed.slice(1))) : claimed;
  const bytes = Buffer.from(record.slice(at), 'utf8');
  const resultAt = Number(workerLength);
  const freshAt = resultAt + Number(resultLength);
  const result = bytes.toString('utf8', resultAt, freshAt);
  const fields: Record<string, string> = {
    ...freshRunFields(bytes.toString('utf8', freshAt)),
    status: 'SUCCESSFUL',
    finishedAt,
    attempts: attempt,
    lastAttemptedAt: claimedAt,
    workers: relative ? `"${bytes.toString('utf8', 0, resultAt)}"` : bytes.toString('utf8', 0, resultAt),
  };
  if (attempt === '1') fields['startedAt'] = claimedAt;
  if (result !== '') fields['result'] = result;
  return fields;
}

/** When the run of a done record finished (ms): the record's first field, in either layout. */
export function doneFinishedAt(record: string): number {
  return Number(record.slice(0, record.indexOf('|')));
}
