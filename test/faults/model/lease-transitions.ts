import {
  mayHandBack,
  recoveriesAfterOutcome,
  renewalAnswer,
  startAnnounced,
  startMarked,
} from '../../../libs/threadmill/src/rules/lease-rules.js';
import { OUTCOME_COUNTER } from '../../../libs/threadmill/src/rules/run-rules.js';
import assert from 'node:assert/strict';
import { groupLogKey, groupsLookedAt, groupTask, leaseEnded } from './group-model.js';
import type { ClaimedRuns, RenewedLease } from '../../../libs/threadmill/src/backend/task-backend.js';
import { MAX_LOG_LINES } from '../../../libs/threadmill/src/records/run-report-limits.js';
import {
  addCount,
  DEFER_MS,
  holds,
  LEASE_TTL_MS,
  publishIfWatched,
  classOf,
  ttlOf,
  pastTtlAt,
  STATUS_TEXT,
  type FinishedStatus,
  type LeaseRef,
  type ModelRun,
  type QueueName,
  type RunModel,
} from './run-model.js';
import { simulateClaim } from './claim-simulation.js';

/**
 * The lease side of the model: claims, outcomes, start marks, renewals and
 * hand-backs, each applied only while its lease holds (R4).
 */

/** How a worker's attempt ended, as the test acknowledges it. */
export type OutcomeKind = 'successful' | 'result' | 'failed' | 'retry' | 'retry-later' | 'quarantine';

/**
 * Checks a claim's reply against the model and applies it. Per queue, the
 * runs it leased must be those `simulateClaim` predicts (the first ones of
 * that queue's ready order, within its room, and of a limit group within
 * the group's), in order, as many as were asked for or were there; they
 * share one lease token, never granted before; each is the run's next
 * attempt. No limit group's cap is exceeded by them. A `replayed` claim
 * (its reply lost, so ioredis resent it) is the second copy of the call.
 */
export function applyClaim(
  model: RunModel,
  queues: readonly QueueName[],
  count: number,
  worker: string,
  claimed: ClaimedRuns,
  bounded = false,
  offset = 0,
  replayed = false,
): void {
  const ids = claimed.map((run) => `${run.queue}/${run.id}`).join(', ');
  const now = Date.now();
  const runningBefore = groupsRunning(model);
  if (bounded) {
    // Two claims whose copies interleaved (both replies lost): the other's
    // first copy may have held room of a capped or limited queue or group
    // meanwhile. Each run leased was ready, and no more than asked for.
    assert.ok(claimed.length <= count, `a claim of ${count} from ${queues} leased [${ids}]`);
    for (const queue of queues) if (!model.paused.has(queue)) groupsLookedAt(model, queue);
    for (const leased of claimed) {
      assert.equal(model.runs.get(leased.id)?.status, 'ready', `${leased.id}, leased, was ready`);
      assert.ok(queues.includes(leased.queue as QueueName), `${leased.id} is of a queue of the claim`);
      const run = model.runs.get(leased.id)!;
      delete run.parked;
      if (run.group !== undefined && model.taskLimits.get(groupTask(run.group))?.max !== undefined) {
        const key = groupLogKey(run.queue, run.group);
        model.groupLogs.set(key, [...(model.groupLogs.get(key) ?? []), now]);
      }
    }
  } else {
    if (replayed) {
      // Its first copy ran, parked and un-parked runs, and leased what its
      // replay handed back (their group log entries with them): the replay
      // claims from there.
      const logs = structuredClone(model.groupLogs);
      simulateClaim(model, queues, count, offset);
      model.groupLogs = logs;
      model.notes.length = 0;
    }
    const { leased: expected, next } = simulateClaim(model, queues, count, offset);
    for (const queue of queues) {
      assert.deepEqual(
        claimed.filter((run) => run.queue === queue).map((run) => run.id),
        expected.get(queue) ?? [],
        `the runs of ${queue} a claim of ${count} from ${queues} leased, of [${ids}]`,
      );
    }
    assert.equal(claimed.length, [...expected.values()].flat().length, `a claim of ${count} leased [${ids}]`);
    assert.equal(claimed.next, next, `where the rotation of a claim of ${count} from ${queues} @${offset} stopped`);
  }
  for (const queue of queues) {
    const taken = claimed.filter((run) => run.queue === queue).length;
    if (!model.rateLimits.has(queue)) continue;
    const log = model.rateLog.get(queue) ?? [];
    for (let i = 0; i < taken; i++) log.push(now);
    model.rateLog.set(queue, log);
  }
  const token = claimed[0]?.token;
  if (token !== undefined) {
    assert.ok(!model.tokens.has(token), `lease token ${token} was granted before`);
    model.tokens.add(token);
  }
  for (const leased of claimed) {
    const queue = leased.queue as QueueName;
    assert.equal(leased.token, token, 'one token per claim');
    const run = model.runs.get(leased.id)!;
    assert.equal(leased.attempts, run.charged + 1, `attempt of ${leased.id}`);
    assert.equal(leased.recoveries ?? 0, run.recoveries, `recoveries of ${leased.id} as claimed`);
    // A run of a rate-limited group must start within the group's slack (0 in the model).
    const rated = run.group !== undefined && model.taskLimits.get(groupTask(run.group))?.max !== undefined;
    assert.equal(leased.startWithinMs, rated || model.rateLimits.has(queue) ? 0 : undefined, `slack of ${run.id}`);
    run.status = 'running';
    run.lease = {
      token: leased.token,
      worker,
      attempt: run.charged + 1,
      deadline: leased.deadline,
      flag: 0,
    };
    model.leases.push({ id: run.id, queue, token: leased.token });
  }
  // A group's cap is never exceeded by a claim: it leases a run of it only below its concurrency.
  for (const [key, running] of groupsRunning(model)) {
    const concurrency = model.taskLimits.get(groupTask(key.slice(key.indexOf('\t') + 1)))?.concurrency;
    if (concurrency === undefined || running <= (runningBefore.get(key) ?? 0)) continue;
    assert.ok(
      running <= concurrency,
      `${running} runs of group ${JSON.stringify(key)} leased, above its cap ${concurrency}`,
    );
  }
}

/** Per `<queue>\t<group>` with runs leased, how many. */
function groupsRunning(model: RunModel): Map<string, number> {
  const running = new Map<string, number>();
  for (const run of model.runs.values()) {
    if (run.status !== 'running' || run.group === undefined) continue;
    const key = groupLogKey(run.queue, run.group);
    running.set(key, (running.get(key) ?? 0) + 1);
  }
  return running;
}

/** Records that a lease's attempt started; counted once per attempt. */
function markStarted(run: ModelRun): void {
  const lease = run.lease!;
  const flag = startMarked(lease.flag);
  if (flag === lease.flag) return;
  lease.flag = flag;
  run.started += 1;
}

/**
 * Settles a run's current attempt: charged, and, for a worker's outcome,
 * ending its series of lease expiries. An outcome means the attempt ran, so
 * it counts as started if no start mark said so.
 */
export function settle(
  model: RunModel,
  run: ModelRun,
  kind: OutcomeKind,
  now: number,
  source: 'worker' | 'reaper',
): void {
  markStarted(run);
  run.charged += 1;
  run.recoveries = recoveriesAfterOutcome(source, run.recoveries);
  delete run.lease;
  leaseEnded(model, run);
  switch (kind) {
    case 'successful':
    case 'result':
      run.status = 'successful';
      run.finishedAt = now;
      run.finishedSeq = ++successes;
      return;
    case 'failed':
      run.status = 'failed';
      run.finishedAt = now;
      return;
    case 'retry':
      run.status = 'ready';
      return;
    case 'retry-later':
      run.status = 'deferred';
      run.dueAt = now + DEFER_MS;
      return;
    case 'quarantine':
      run.status = 'quarantined';
  }
}

/** Successes so far, in the order they were applied: the successful lists' order. */
let successes = 0;

/**
 * Removes the finished runs of one index of `queue` (its outcome's default
 * index, or that of TTL class `member`) whose TTL passed: of a successful
 * list, those from its head up to the first that has not (after a clock
 * step back, a run may follow one that finished later).
 */
export function trimIndex(
  model: RunModel,
  queue: QueueName,
  status: FinishedStatus,
  member: string | undefined,
  now: number,
): void {
  const runs = [...model.runs.values()].filter(
    (run) => run.queue === queue && run.status === status && classOf(run, status) === member,
  );
  if (status === 'successful') runs.sort((a, b) => a.finishedSeq! - b.finishedSeq!);
  for (const run of runs) {
    if (pastTtlAt(run.finishedAt!, ttlOf(run, status), now)) model.runs.delete(run.id);
    else if (status === 'successful') return;
  }
}

/** The TTL classes of `queue`'s finished runs, default (undefined) first, each with its outcome. */
export function indexesOf(model: RunModel, queue: QueueName): [FinishedStatus, string | undefined][] {
  const indexes = new Map<string, [FinishedStatus, string | undefined]>([
    ['successful', ['successful', undefined]],
    ['failed', ['failed', undefined]],
  ]);
  for (const run of model.runs.values()) {
    if (run.queue !== queue || (run.status !== 'successful' && run.status !== 'failed')) continue;
    const member = classOf(run, run.status);
    if (member) indexes.set(member, [run.status, member]);
  }
  return [...indexes.values()];
}

/** The counter each outcome adds to: the library's, by the backend's form of the outcome. */
const COUNTER: Record<OutcomeKind, string> = {
  successful: OUTCOME_COUNTER.successful,
  result: OUTCOME_COUNTER.successful,
  failed: OUTCOME_COUNTER.failed,
  retry: OUTCOME_COUNTER.retry,
  'retry-later': OUTCOME_COUNTER.retry,
  quarantine: OUTCOME_COUNTER.quarantine,
};

/**
 * One acknowledge call: outcomes in order (a later one for a run settled
 * earlier in the call is stale), then start marks. Returns per outcome
 * whether it applied. Each finished index (of an outcome's default TTL or
 * of a TTL class) that grew in the call has its expired runs trimmed.
 */
export function acknowledgeInModel(
  model: RunModel,
  outcomes: readonly { lease: LeaseRef; kind: OutcomeKind }[],
  marks: readonly LeaseRef[],
  now: number,
): boolean[] {
  const grown = new Map<string, [QueueName, FinishedStatus, string | undefined]>();
  const applied = outcomes.map(({ lease, kind }) => {
    if (!holds(model, lease, now)) {
      addCount(model, lease.queue, 'staleAcks');
      return false;
    }
    const run = model.runs.get(lease.id)!;
    settle(model, run, kind, now, 'worker');
    publishIfWatched(model, run);
    addCount(model, run.queue, COUNTER[kind]);
    if (run.status === 'successful' || run.status === 'failed') {
      const member = classOf(run, run.status);
      grown.set(`${run.queue}/${member ?? run.status}`, [run.queue, run.status, member]);
    }
    return true;
  });
  for (const lease of marks) {
    if (holds(model, lease, now)) markStarted(model.runs.get(lease.id)!);
  }
  for (const [queue, status, member] of grown.values()) trimIndex(model, queue, status, member, now);
  return applied;
}

/** A start mark: the start recorded while the lease holds. */
export function startInModel(model: RunModel, lease: LeaseRef, now: number): void {
  if (holds(model, lease, now)) markStarted(model.runs.get(lease.id)!);
}

/** `announceStart`: true, and the start announced (not recorded), while the lease holds. */
export function announceInModel(model: RunModel, lease: LeaseRef, now: number): boolean {
  if (!holds(model, lease, now)) return false;
  const held = model.runs.get(lease.id)!.lease!;
  held.flag = startAnnounced(held.flag);
  return true;
}

/**
 * A renewal: the deadline moves to a lease length from now while the lease
 * holds, answered `paused` when its queue is paused; a lease that does not
 * hold is `cancelled` when its run is CANCELLED, else `lost`.
 */
export function renewInModel(model: RunModel, leases: readonly LeaseRef[], now: number): RenewedLease[] {
  return leases.map((lease) => {
    const run = model.runs.get(lease.id);
    const status = run === undefined ? undefined : STATUS_TEXT[run.status];
    if (!holds(model, lease, now)) return renewalAnswer(false, false, status);
    run!.lease!.deadline = now + LEASE_TTL_MS;
    return renewalAnswer(true, model.paused.has(run!.queue), status);
  });
}

/**
 * `defer.lua` (`context.retryAfter`): each lease that holds ends without
 * charging its attempt; its run waits deferred for {@link DEFER_MS}, its
 * series of lease expiries ended.
 */
export function deferInModel(model: RunModel, leases: readonly LeaseRef[], now: number): boolean[] {
  return leases.map((lease) => {
    if (!holds(model, lease, now)) return false;
    const run = model.runs.get(lease.id)!;
    run.status = 'deferred';
    run.dueAt = now + DEFER_MS;
    run.recoveries = 0;
    delete run.lease;
    leaseEnded(model, run);
    return true;
  });
}

/** A hand-back of runs whose start is unrecorded: READY at their place, uncharged, while the lease holds. */
export function releaseInModel(model: RunModel, leases: readonly LeaseRef[], now: number): boolean[] {
  return leases.map((lease) => {
    if (!holds(model, lease, now) || !mayHandBack(model.runs.get(lease.id)!.lease!.flag)) return false;
    const run = model.runs.get(lease.id)!;
    run.status = 'ready';
    delete run.lease;
    leaseEnded(model, run);
    return true;
  });
}

/** What a report carries in the model: its lease, a progress JSON or none, and lines. */
export interface ModelReport {
  readonly lease: LeaseRef;
  readonly progress?: string;
  readonly lines: readonly string[];
}

/**
 * A report of progress and log lines (`lua/report.lua`): stored while its
 * lease holds (the latest progress, the last `MAX_LOG_LINES` lines of every
 * report of the run), refused otherwise; a registered run's waiters get an
 * entry, and it stays registered.
 */
export function reportInModel(model: RunModel, reports: readonly ModelReport[], now: number): boolean[] {
  return reports.map(({ lease, progress, lines }) => {
    if (!holds(model, lease, now)) return false;
    const run = model.runs.get(lease.id)!;
    if (progress !== undefined) run.progress = progress;
    if (lines.length > 0) run.logs = [...(run.logs ?? []), ...lines].slice(-MAX_LOG_LINES);
    if (model.watched.has(run.id)) model.published.push(`${run.id} reported`);
    return true;
  });
}
