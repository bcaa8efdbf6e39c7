import { decodeJson } from '../codec/json-codec.js';
import { parseFragment } from '../codec/json-fragment.js';
import type { LeasedRun, StoredRun } from '../backend/task-backend.js';
import { decodeRunPayload, type RunPayload } from './run-payload.js';
import type { TaskError, TaskResult } from './task-result.js';
import { TaskStatus } from './task-status.enum.js';

const date = (ms: string | number | undefined | null): Date | null =>
  ms === undefined || ms === null || ms === '' ? null : new Date(Number(ms));

/** Builds the {@link TaskResult} of a stored run from its fields. */
export function taskResultFromStored<R = unknown>(id: string, fields: StoredRun): TaskResult<R> {
  const payload = decodeRunPayload(fields['payload'] ?? '');
  return {
    id,
    taskName: payload.task,
    queue: fields['queue'] ?? payload.queue,
    priority: payload.priority,
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
  };
}

/** Builds the {@link TaskResult} of a run just leased to a worker (status RUNNING). */
export function taskResultFromLease(run: LeasedRun, payload: RunPayload): TaskResult {
  return {
    id: run.id,
    taskName: payload.task,
    queue: run.queue,
    priority: payload.priority,
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
  };
}
