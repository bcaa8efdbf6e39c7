import type { Acknowledgement } from '../../backend/task-backend.js';
import { leaseHolds as holdsAt, recoveriesAfterOutcome } from '../../rules/lease-rules.js';
import { keptFor, OUTCOME_COUNTER } from '../../rules/run-rules.js';
import { appendFragment, type MemoryRun } from './memory-run.js';
import type { MemoryState } from './memory-state.js';
import { BROKER_TOPIC } from './memory-state.js';

/** Whether `run`'s lease is `token`'s and its deadline has not passed (see `leaseHolds` in `lua/includes/lease.lua`). */
export function leaseHolds(run: MemoryRun | undefined, token: string, now: number): run is MemoryRun {
  return run?.lease !== undefined && run.lease.token === token && holdsAt(run.lease.deadline, now);
}

/**
 * Applies one outcome under its lease, as `lua/acknowledge.lua` does: the
 * attempt is settled into the run's fields, the run moves to its segment,
 * and a registered run that settled is published. Returns false, changing
 * nothing but the stale count, when the lease no longer holds.
 */
export function applyAcknowledgement(state: MemoryState, ack: Acknowledgement, now: number): boolean {
  const run = state.runs.get(ack.id);
  const queue = state.queue(ack.queue);
  if (!leaseHolds(run, ack.token, now) || run.queue !== ack.queue) {
    queue.count('staleAcks');
    return false;
  }
  const lease = run.lease!;
  run.lease = undefined;
  queue.running.delete(run.id);
  const fields = run.fields;
  const { outcome } = ack;
  const recoveries = recoveriesAfterOutcome(ack.source ?? 'worker', Number(fields['recoveries'] ?? 0));
  if (recoveries === 0) delete fields['recoveries'];
  fields['attempts'] = String(lease.attempt);
  fields['lastAttemptedAt'] = String(lease.claimedAt);
  if (lease.attempt === 1) {
    fields['workers'] = lease.worker;
    fields['startedAt'] = String(lease.claimedAt);
  } else {
    fields['workers'] = appendFragment(fields['workers'], lease.worker);
  }
  const nowText = String(now);
  switch (outcome.kind) {
    case 'successful':
      fields['status'] = 'SUCCESSFUL';
      fields['finishedAt'] = nowText;
      if (outcome.returnValue !== undefined) fields['result'] = outcome.returnValue;
      queue.successful.set(run.id, now);
      queue.countMinute(now, OUTCOME_COUNTER.successful);
      break;
    case 'failed':
      fields['status'] = 'FAILED';
      fields['finishedAt'] = nowText;
      fields['errors'] = appendFragment(fields['errors'], JSON.stringify(outcome.error));
      queue.failed.set(run.id, now);
      queue.countMinute(now, OUTCOME_COUNTER.failed);
      break;
    case 'quarantine':
      fields['status'] = 'QUARANTINED';
      fields['quarantinedAt'] = nowText;
      fields['quarantine'] = JSON.stringify({ reason: outcome.reason, message: outcome.message });
      if (outcome.error) fields['errors'] = appendFragment(fields['errors'], JSON.stringify(outcome.error));
      else fields['errors'] ??= '';
      queue.quarantined.set(run.id, now);
      queue.countMinute(now, OUTCOME_COUNTER.quarantine);
      break;
    case 'retry':
      fields['status'] = 'READY';
      fields['errors'] = appendFragment(fields['errors'], JSON.stringify(outcome.error));
      if (outcome.delayMs > 0) {
        fields['runAfter'] = String(now + outcome.delayMs);
        queue.deferred.set(run.id, now + outcome.delayMs);
        state.wakeups.wake(BROKER_TOPIC);
      } else {
        delete fields['runAfter'];
        queue.ready.set(run.id, run.score);
        state.wakeups.wake(run.queue);
      }
      queue.countMinute(now, OUTCOME_COUNTER.retry);
      // A retry does not settle the run: its waiter waits on.
      return true;
  }
  state.log.publish({ id: run.id, fields: run.stored() }, now);
  // A quarantined run is kept, for an operator; a finished one for its TTL: its task's, or its outcome's default.
  if (outcome.kind === 'quarantine') return true;
  const ttl = keptFor(outcome.kind, state.resultTtls, ack.resultTtlMs);
  if (ttl === 0) state.delete(run);
  else queue.keptFor.set(run.id, ttl);
  return true;
}
