import { decodeJson } from './json-codec.js';
import { parseFragment } from './json-fragment.js';
import type { LeasedRun, StoredRun } from '../records/backend-records.js';
import { decodeRunPayload, type RunPayload } from './run-payload.js';
import type { QuarantineRecord, TaskError, TaskResult } from '../records/task-result.js';
import { TaskStatus } from '../records/task-status.enum.js';

const date = (ms: string | number | undefined | null): Date | null =>
  ms === undefined || ms === null || ms === '' ? null : new Date(Number(ms));

/**
 * What a stored payload says, or placeholders when it cannot be read (the run
 * is then quarantined). An envelope written before the queue moved out of it
 * still names it (`queue`).
 */
function readPayload(text: string): Pick<RunPayload, 'task' | 'priority' | 'args'> & { queue?: string } {
  try {
    return decodeRunPayload(text);
  } catch {
    return { task: UNREADABLE_TASK, priority: 0, args: [] };
  }
}

/** The task name reported for a run whose payload cannot be read. */
export const UNREADABLE_TASK = '(unreadable payload)';

function quarantineOf(fields: StoredRun): QuarantineRecord | undefined {
  if (!fields['quarantine']) return undefined;
  const { reason, message } = JSON.parse(fields['quarantine']) as Pick<QuarantineRecord, 'reason' | 'message'>;
  return { reason, message, at: date(fields['quarantinedAt'])!, payload: fields['payload'] ?? '' };
}

/**
 * Builds the {@link TaskResult} of a stored run from its fields. Never
 * throws for a damaged payload: such a run reads as task
 * `(unreadable payload)` with no arguments.
 */
export function taskResultFromStored<R = unknown>(id: string, fields: StoredRun): TaskResult<R> {
  const payload = readPayload(fields['payload'] ?? '');
  const quarantine = quarantineOf(fields);
  return {
    id,
    taskName: payload.task,
    queue: fields['queue'] ?? payload.queue ?? '',
    priority: payload.priority ?? 0,
    status: (fields['status'] as TaskStatus | undefined) ?? TaskStatus.READY,
    args: payload.args,
    enqueuedAt: date(fields['enqueuedAt'])!,
    runAfter: date(fields['runAfter']),
    startedAt: date(fields['startedAt']),
    lastAttemptedAt: date(fields['lastAttemptedAt']),
    finishedAt: date(fields['finishedAt']),
    attempts: Number(fields['attempts'] ?? 0),
    workerIds: parseFragment<string>(fields['workers']),
    errors: parseFragment<TaskError>(fields['errors']),
    returnValue: fields['result'] ? decodeJson<R>(fields['result']) : undefined,
    progress: fields['progress'] ? decodeJson(fields['progress']) : undefined,
    logs: logLines(fields['logs']),
    ...(quarantine ? { quarantine } : {}),
    ...(fields['flow'] ? { flowId: fields['flow'] } : {}),
  };
}

/** Builds the {@link TaskResult} of a run just leased to a worker (status RUNNING). */
export function taskResultFromLease(run: LeasedRun, payload: RunPayload): TaskResult {
  return {
    id: run.id,
    taskName: payload.task,
    queue: run.queue,
    priority: payload.priority ?? 0,
    status: TaskStatus.RUNNING,
    args: payload.args,
    enqueuedAt: new Date(run.enqueuedAt),
    runAfter: null,
    startedAt: date(run.startedAt),
    lastAttemptedAt: new Date(run.claimedAt),
    finishedAt: null,
    attempts: run.attempts,
    workerIds: run.workerIds,
    errors: run.errors,
    returnValue: undefined,
    progress: undefined,
    logs: [],
  };
}

/** The lines of a run's `logs` field (joined by newlines; see `lua/report.lua`). */
function logLines(logs: string | undefined): readonly string[] {
  return logs === undefined ? NO_LINES : logs.split('\n');
}

const NO_LINES: readonly string[] = Object.freeze([]);
