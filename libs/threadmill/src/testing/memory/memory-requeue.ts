import type { RequeueableSegment } from '../../records/backend-records.js';
import { requeueable } from '../../rules/run-rules.js';
import type { MemoryState } from './memory-state.js';

/**
 * Requeues one run, as `lua/includes/requeue-run.lua` does: a FAILED,
 * QUARANTINED or CANCELLED run of `queueName` goes back to READY at its
 * original place, keeping its id, attempts and error history; its result,
 * quarantine record and recovery count are cleared. The caller counts the
 * requeues and wakes the queue's consumers.
 * @returns whether it was requeued, and the status it had ('' when the queue has no such run)
 */
export function requeueRun(state: MemoryState, id: string, queueName: string): { requeued: boolean; status: string } {
  const run = state.runs.get(id);
  if (!run || run.queue !== queueName) return { requeued: false, status: '' };
  const status = run.status;
  if (!requeueable(status)) return { requeued: false, status };
  for (const field of ['result', 'finishedAt', 'quarantine', 'quarantinedAt', 'recoveries', 'runAfter']) {
    delete run.fields[field];
  }
  run.fields['status'] = 'READY';
  const queue = state.queue(queueName);
  queue.remove(id);
  queue.ready.set(id, run.score);
  return { requeued: true, status };
}

/**
 * Requeues every run of a segment, at once: nothing else runs in between, so
 * the one chunk requeues exactly what the segment held (the Redis backend's
 * chunks requeue the same runs when nothing interleaves).
 * @returns the ids requeued, oldest first
 */
export function requeueSegment(state: MemoryState, queueName: string, segment: RequeueableSegment): string[] {
  const requeued = state
    .queue(queueName)
    .ordered(segment)
    .reverse()
    .filter((id) => requeueRun(state, id, queueName).requeued);
  if (requeued.length > 0) {
    state.queue(queueName).count('requeued', requeued.length);
    state.wakeups.wake(queueName);
  }
  return requeued;
}
