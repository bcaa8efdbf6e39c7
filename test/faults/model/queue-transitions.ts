import assert from 'node:assert/strict';
import { expiryOf, quarantinedOnReap, startRecorded } from '../../../libs/threadmill/src/rules/lease-rules.js';
import { cancellable, dequeueable, keptFor, requeueable } from '../../../libs/threadmill/src/rules/run-rules.js';
import { indexesOf, settle, trimIndex } from './lease-transitions.js';
import { leaseEnded } from './group-model.js';
import { restoredFlows, snapshotFlows } from './flow-model.js';
import {
  addCount,
  cloneModel,
  DEFER_MS,
  dueAt,
  expiredAt,
  pastTtlAt,
  MAX_RECOVERIES,
  publishIfWatched,
  QUEUES,
  RESULT_TTLS,
  STATUS_TEXT,
  TASK_ONCE,
  taskOf,
  type QueueName,
  type RunModel,
} from './run-model.js';

/**
 * The queue side of the model: enqueues, an operator's requeue, dequeue and
 * purge, a broker's pass, clock steps and restores.
 */

/** A run the test asks to store. */
export interface PlannedRun {
  readonly id: string;
  readonly queue: QueueName;
  readonly priority: number;
  readonly deferred: boolean;
  readonly idempotent: boolean;
  /** Its limit group, for a run of a task with a limit. */
  readonly group?: string;
}

/**
 * One store call: each item takes the next `seq` (a skipped one too, as
 * `INCRBY` counts it), and is stored unless its id has a run. Returns per
 * item whether it was stored.
 */
export function enqueueInModel(model: RunModel, planned: readonly PlannedRun[], now: number): boolean[] {
  const base = model.seq;
  model.seq += planned.length;
  return planned.map((item, i) => {
    if (model.runs.has(item.id)) {
      assert.ok(item.idempotent, `the test stores an existing id ${item.id} only as idempotent`);
      return false;
    }
    if (!model.ids.includes(item.id)) model.ids.push(item.id);
    model.lastQueue.set(item.id, item.queue);
    addCount(model, item.queue, 'enqueued');
    if (item.group !== undefined) model.grouped.add(item.queue);
    model.runs.set(item.id, {
      id: item.id,
      queue: item.queue,
      priority: item.priority,
      seq: base + i + 1,
      ...(item.group !== undefined ? { group: item.group } : {}),
      status: item.deferred ? 'deferred' : 'ready',
      ...(item.deferred ? { dueAt: now + DEFER_MS } : {}),
      charged: 0,
      started: 0,
      recoveries: 0,
    });
    return true;
  });
}

/** A pending (READY or deferred) run of `queue` is removed; anything else is refused as it is. */
export function dequeueInModel(model: RunModel, id: string, queue: QueueName): { removed: boolean; status: string } {
  const run = model.runs.get(id);
  if (run?.queue !== queue) return { removed: false, status: '' };
  const status = STATUS_TEXT[run.status];
  if (!dequeueable(status)) return { removed: false, status };
  if (run.parked) model.notes.push('dequeue of a parked run');
  publishIfWatched(model, run, 'dequeued');
  model.runs.delete(id);
  addCount(model, queue, 'dequeued');
  return { removed: true, status };
}

/**
 * A pending or running run of `queue` ends CANCELLED (cancel.lua): a pending
 * one leaves its segment, a running one's lease is revoked, its attempt
 * charged when its start was recorded. A CANCELLED run answers so, and
 * anything else is refused as it is.
 */
export function cancelInModel(
  model: RunModel,
  id: string,
  queue: QueueName,
  now: number,
): { cancelled: boolean; status: string } {
  const run = model.runs.get(id);
  if (run?.queue !== queue) return { cancelled: false, status: '' };
  const status = STATUS_TEXT[run.status];
  if (!cancellable(status)) return { cancelled: false, status };
  if (run.lease && startRecorded(run.lease.flag)) run.charged += 1;
  if (run.parked) model.notes.push('cancel of a parked run');
  if (run.lease) leaseEnded(model, run);
  delete run.lease;
  delete run.dueAt;
  delete run.parked;
  run.status = 'cancelled';
  run.finishedAt = now;
  publishIfWatched(model, run);
  addCount(model, queue, 'cancelled');
  return { cancelled: true, status };
}

/** A FAILED, QUARANTINED or CANCELLED run of `queue` goes back to READY at its place; anything else is refused. */
export function requeueInModel(model: RunModel, id: string, queue: QueueName): { requeued: boolean; status: string } {
  const run = model.runs.get(id);
  if (run?.queue !== queue) return { requeued: false, status: '' };
  const status = STATUS_TEXT[run.status];
  if (!requeueable(status)) return { requeued: false, status };
  run.status = 'ready';
  run.recoveries = 0;
  delete run.finishedAt;
  addCount(model, queue, 'requeued');
  return { requeued: true, status };
}

/** Every run of `queue` goes, leased ones included; returns how many. */
export function purgeInModel(model: RunModel, queue: QueueName): number {
  const purged = [...model.runs.values()].filter((run) => run.queue === queue);
  // The queue's limit groups go with its runs (their rate logs stay).
  model.grouped.delete(queue);
  for (const run of purged) {
    if (run.parked) model.notes.push('purge of a parked run');
    publishIfWatched(model, run, 'purged');
    model.runs.delete(run.id);
  }
  return purged.length;
}

/**
 * A broker pass (see `Broker.pass`): due deferred runs become READY; expired
 * leases are reaped (an unstarted one hands its run back uncharged, a first
 * expiry making it a suspect, an announced one counting one more recovery;
 * a started one is charged, one more recovery, and the broker retries it at
 * once, or quarantines it at `MAX_RECOVERIES`, as it does an announced one
 * there); finished runs past their result TTL are trimmed.
 */
export function brokerPassInModel(
  model: RunModel,
  now: number,
): {
  reaped: number;
  returned: number;
  announced: number;
  quarantined: number;
  failed: number;
  promoted: number;
  trimmed: number;
} {
  let reaped = 0;
  let announcedBack = 0;
  let failed = 0;
  let returned = 0;
  let quarantined = 0;
  let promoted = 0;
  const before = model.runs.size;
  for (const run of model.runs.values()) {
    if (run.status === 'deferred' && dueAt(run.dueAt!, now)) {
      run.status = 'ready';
      delete run.dueAt;
      promoted++;
    }
  }
  for (const run of model.runs.values()) {
    if (run.status !== 'running' || !expiredAt(run.lease!.deadline, now)) continue;
    const { flag } = run.lease!;
    const expiry = expiryOf(flag, run.recoveries, MAX_RECOVERIES);
    run.recoveries = expiry.recoveries;
    if (expiry.handBack) {
      if (flag === 3) announcedBack++;
      run.status = 'ready';
      delete run.lease;
      leaseEnded(model, run);
      returned++;
    } else {
      const quarantine = quarantinedOnReap(run.recoveries, MAX_RECOVERIES);
      // Past maxRecoveries quarantined; else its task's policy: TASK retries at once, TASK_ONCE has none.
      const kind = quarantine ? 'quarantine' : taskOf(run.id) === TASK_ONCE ? 'failed' : 'retry';
      settle(model, run, kind, now, 'reaper');
      publishIfWatched(model, run);
      addCount(model, run.queue, kind === 'quarantine' ? 'quarantined' : kind === 'failed' ? 'failed' : 'retried');
      if (quarantine) quarantined++;
      if (kind === 'failed') failed++;
      reaped++;
    }
  }
  for (const queue of QUEUES) {
    for (const [status, member] of indexesOf(model, queue)) trimIndex(model, queue, status, member, now);
  }
  const cancelledTtl = keptFor('cancelled', RESULT_TTLS);
  for (const run of model.runs.values()) {
    if (run.status !== 'cancelled') continue;
    if (pastTtlAt(run.finishedAt!, cancelledTtl, now)) model.runs.delete(run.id);
  }
  return {
    reaped,
    returned,
    announced: announcedBack,
    quarantined,
    failed,
    promoted,
    trimmed: before - model.runs.size,
  };
}

/**
 * Shifts every time the scripts compare with now by `deltaMs`: a clock step
 * of `-deltaMs` (a negative shift is the clock stepping forward).
 */
export function shiftTimesInModel(model: RunModel, deltaMs: number): void {
  for (const run of model.runs.values()) {
    if (run.lease) run.lease.deadline += deltaMs;
    if (run.dueAt !== undefined) run.dueAt += deltaMs;
    if (run.finishedAt !== undefined) run.finishedAt += deltaMs;
  }
  for (const key of model.dedupe.values()) key.firstAt += deltaMs;
  for (const [queue, log] of model.rateLog)
    model.rateLog.set(
      queue,
      log.map((at) => at + deltaMs),
    );
  for (const [key, log] of model.groupLogs)
    model.groupLogs.set(
      key,
      log.map((at) => at + deltaMs),
    );
}

export function snapshotInModel(model: RunModel): void {
  model.snapshot = structuredClone({
    runs: model.runs,
    seq: model.seq,
    stats: model.stats,
    watched: model.watched,
    paused: model.paused,
    dedupe: model.dedupe,
    schedules: model.schedules,
    caps: model.caps,
    rateLimits: model.rateLimits,
    rateLog: model.rateLog,
    taskLimits: model.taskLimits,
    groupLogs: model.groupLogs,
    grouped: model.grouped,
    flows: snapshotFlows(model.flows),
  });
}

/**
 * Redis restarted from the snapshot: runs, `seq` and counters are the snapshot's again.
 * Leases granted since are superseded (their runs hold the snapshot's lease,
 * or none), and stay in `leases` for the test to try.
 */
export function restoreInModel(model: RunModel): void {
  const {
    runs,
    seq,
    stats,
    watched,
    paused,
    dedupe,
    schedules,
    caps,
    rateLimits,
    rateLog,
    taskLimits,
    groupLogs,
    grouped,
    flows,
  } = cloneModel(model).snapshot!;
  model.flows = restoredFlows(model.flows, flows);
  model.taskLimits = taskLimits;
  model.groupLogs = groupLogs;
  model.grouped = grouped;
  model.caps = caps;
  model.rateLimits = rateLimits;
  model.rateLog = rateLog;
  model.dedupe = dedupe;
  model.schedules = schedules;
  model.runs = runs;
  model.seq = seq;
  model.stats = stats;
  model.watched = watched;
  model.paused = paused;
  // The snapshot's groups index is the one Redis holds again: nothing is known freed since.
  model.freedGroups.clear();
}
