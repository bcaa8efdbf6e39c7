import { startRecorded } from '../../rules/lease-rules.js';
import { cancellable, keptFor } from '../../rules/run-rules.js';
import { appendFragment } from './memory-run.js';
import type { MemoryState } from './memory-state.js';

/**
 * Cancels a pending or running run, as `lua/cancel.lua` does: a pending run
 * (a WAITING flow node too) leaves its segment; a running run's lease is
 * revoked (its holder's later writes are stale, and its renewal answers
 * `cancelled`), its attempt counted when it had started. The run ends CANCELLED, kept for the failed
 * TTL (0: deleted once published), and a registered run is published.
 */
export function cancelRun(state: MemoryState, id: string, queueName: string): { cancelled: boolean; status: string } {
  const run = state.runs.get(id);
  if (!run || run.queue !== queueName) return { cancelled: false, status: '' };
  const status = run.status;
  if (!cancellable(status)) return { cancelled: false, status };
  const queue = state.queue(queueName);
  const now = state.clock.now();
  const { fields } = run;
  const lease = run.lease;
  if (lease) {
    run.lease = undefined;
    queue.running.delete(id);
    if (startRecorded(lease.started)) {
      // Its start was recorded: the attempt counts as made.
      fields['attempts'] = String(lease.attempt);
      fields['lastAttemptedAt'] = String(lease.claimedAt);
      if (lease.attempt === 1) {
        fields['workers'] = lease.worker;
        fields['startedAt'] = String(lease.claimedAt);
      } else {
        fields['workers'] = appendFragment(fields['workers'], lease.worker);
      }
    }
  }
  queue.ready.delete(id);
  queue.deferred.delete(id);
  queue.waiting.delete(id);
  if (lease) state.groups.leaseEnded(state, run);
  fields['status'] = 'CANCELLED';
  fields['finishedAt'] = String(now);
  queue.countMinute(now, 'cancelled');
  state.log.publish({ id, fields: run.stored() }, now);
  const ttl = keptFor('cancelled', state.resultTtls);
  if (ttl === 0) {
    state.delete(run);
  } else {
    queue.cancelled.set(id, now);
    queue.keptFor.set(id, ttl);
  }
  return { cancelled: true, status };
}
