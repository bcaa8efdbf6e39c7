import type { StoredRun } from '../../records/backend-records.js';
import { TaskResultNotFoundError } from '../../errors/task-result-not-found.error.js';
import type { TaskResult } from '../../records/task-result.js';
import { taskResultFromStored } from '../../codec/task-result.factory.js';
/** What a waiter is told while the run runs (`WaitOptions.onProgress`, `onLog`). */
export interface ReportListeners {
  /** Told each progress value a running attempt of the run reports. */
  onProgress?: (value: unknown) => void;
  /** Told each line a running attempt of the run logs. */
  onLog?: (line: string) => void;
}

/** How a registered run ended. */
export type Outcome =
  { readonly fields: StoredRun } | { readonly removed: 'dequeued' | 'purged' } | { readonly missing: true };

/** The outcome of a run no backend has. */
export const MISSING: Outcome = { missing: true };

/** One `waitFor` call waiting for a run. */
export interface WaitCall {
  resolve(result: TaskResult): void;
  reject(error: Error): void;
  timer?: NodeJS.Timeout;
  /** Removes the abort listener of the waiter's signal. */
  unlisten?: () => void;
  /** Told the run's progress and log lines. */
  listeners?: ReportListeners;
}

/** Settles `waiters` with `outcome`: the run's result, or why it is gone. */
export function deliver(id: string, outcome: Outcome, waiters: Iterable<WaitCall>): void {
  let result: TaskResult | undefined;
  let error: Error | undefined;
  if ('fields' in outcome) {
    try {
      result = taskResultFromStored(id, outcome.fields);
    } catch (cause) {
      error = cause instanceof Error ? cause : new Error(String(cause));
    }
  } else if ('removed' in outcome) {
    error = new TaskResultNotFoundError(id, `it was ${outcome.removed} while waitFor waited for it`);
  } else {
    error = new TaskResultNotFoundError(
      id,
      'it was never enqueued on this backend, or it finished and its result is no longer kept (resultTtlMs; ' +
        'a run whose result is not kept can be waited for only when it was enqueued with `waitable: true`)',
    );
  }
  for (const waiter of waiters) {
    release(waiter);
    if (error) waiter.reject(error);
    else waiter.resolve(result!);
  }
}

/** Clears what a waiter holds besides its promise: its timer and its abort listener. */
export function release(waiter: WaitCall): void {
  clearTimeout(waiter.timer);
  waiter.unlisten?.();
}
