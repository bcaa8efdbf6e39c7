import { mayHandBack } from '../../../libs/threadmill/src/rules/lease-rules.js';
import assert from 'node:assert/strict';
import type { Acknowledgement, Outcome } from '../../../libs/threadmill/src/backend/task-backend.js';
import { overriddenTtl } from '../../../libs/threadmill/src/records/result-ttl.js';
import {
  acknowledgeInModel,
  applyClaim,
  deferInModel,
  releaseInModel,
  renewInModel,
  startInModel,
  announceInModel,
  type OutcomeKind,
} from './lease-transitions.js';
import {
  idleQueuesOf,
  ModelCommand,
  newRun,
  oneOrderOf,
  planRuns,
  queuesOf,
  shown,
  specsText,
  type RunSpec,
} from './model-command.js';
import { enqueueInModel } from './queue-transitions.js';
import { assertParkedAs, parkedRuns, syncGroups } from './group-model.js';
import { until, type ModelRig, type Via } from './redis-rig.js';
import {
  classedIds,
  currentLeases,
  DEFER_MS,
  isPast,
  LEASE_TTL_MS,
  leaseRefOf,
  nth,
  readyIds,
  rateLogOf,
  runsIn,
  runsWith,
  taskOf,
  type LeaseRef,
  type QueueName,
  type RunModel,
} from './run-model.js';

/** Commands of consumers: claims, outcomes, start marks, renewals, hand-backs, and a lease left to expire. */

/** How a consumer claims: a plain call, its claim waiter (woken or timing out), or a call whose reply is lost. */
export type ClaimPath = 'plain' | 'waiter' | 'lost';

/** A claim of 1..4 runs (or 70) from one queue or both, by one of the consumers, from a place in the rotation. */
export interface ClaimSpec {
  readonly queues: number;
  readonly count: number;
  readonly worker: string;
  readonly offset: number;
}

const claimText = (c: ClaimSpec): string => `${queuesOf(c.queues).join('+')}, ${c.count}, ${c.worker}, @${c.offset}`;

export class ClaimCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly claim: ClaimSpec,
    readonly path: ClaimPath,
  ) {
    super();
    this.kind = { plain: 'claim', waiter: 'claim through a waiter', lost: 'claim, reply lost' }[path];
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { count, worker, offset } = this.claim;
    const queues = queuesOf(this.claim.queues);
    // A waiter waits 20 ms at most: on an empty queue the claim behind it then runs, and finds nothing.
    const claimed =
      this.path === 'waiter'
        ? await rig.waiter(queues, worker).claim(count, offset, 20)
        : await rig.via(this.path === 'lost' ? 'lost' : 'direct', 'claim', (backend) =>
            backend.claim(queues, count, worker, offset),
          );
    if (queues.some((queue) => model.paused.has(queue) && readyIds(model, queue).length > 0)) {
      rig.tally.note('claim passed over a paused queue');
    }
    noteHeldBack(model, queues, rig);
    applyClaim(model, queues, count, worker, claimed, false, offset, this.path === 'lost');
    // A lost reply's first copy logged what it leased too (then handed back).
    if (this.path === 'lost') await syncRateLogs(model, queues, rig);
  }

  toString(): string {
    return `claim[${this.path}](${claimText(this.claim)})`;
  }
}

/** How long a woken consumer would wait: it must be woken long before. */
const WAKE_TIMEOUT_MS = 10_000;

/**
 * An idle consumer blocks on its queues' wake markers, its claim queued
 * behind the wait; an enqueue wakes it, and the claim's reply brings it the
 * new runs. (A marker left behind by a dequeue may end the wait first: the
 * claim then ran before the enqueue, and found nothing.)
 */
export class WakeClaimCommand extends ModelCommand {
  protected readonly kind = 'claim woken by an enqueue';

  constructor(
    readonly claim: ClaimSpec,
    readonly items: readonly RunSpec[],
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return idleQueuesOf(model, this.claim.queues) !== undefined;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { count, worker, offset } = this.claim;
    const queues = idleQueuesOf(model, this.claim.queues)!;
    const waiting = rig.waiter(queues, worker).claim(count, offset, WAKE_TIMEOUT_MS);
    let answered = false;
    void waiting.finally(() => (answered = true)).catch(() => undefined);
    await until('the consumer waits', async () => answered || (await rig.blockedWaits()).length > 0);
    // One run at least is ready now in a queue the consumer waits on.
    const first = { ...this.items[0]!, id: 'new', queue: queues[0]!, deferred: false } as const;
    const planned = planRuns(model, [first, ...this.items.slice(1)]);
    const { now, created } = await rig.backend.store(planned.map(newRun));
    const enqueuedAt = Date.now();
    const claimed = await waiting;
    // Woken, not timed out: the enqueue's wake marker ended the wait.
    assert.ok(Date.now() - enqueuedAt < WAKE_TIMEOUT_MS / 2, 'the enqueue woke the waiting consumer');
    // Both orders may explain the reply (nothing leased: the claim ran first,
    // or after, and parked the new run): what Redis parked tells them apart.
    const parked = await parkedRuns(rig);
    const order = oneOrderOf(model, {
      'enqueue, then claim': (copy) => {
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
        applyClaim(copy, queues, count, worker, claimed, false, offset);
        assertParkedAs(copy, parked);
      },
      'claim, then enqueue': (copy) => {
        applyClaim(copy, queues, count, worker, claimed, false, offset);
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
        assertParkedAs(copy, parked);
      },
    });
    rig.tally.note(`${this.kind}: ${order}`);
    rig.tally.stored += created.filter(Boolean).length;
  }

  toString(): string {
    return `wakeClaim(${claimText(this.claim)}, ${specsText(this.items)})`;
  }
}

/**
 * Two claims in flight on one connection lose both replies (the connection
 * is cut 50 ms after the first); ioredis resends both, and each copy hands
 * back what its first copy leased and claims again. Each caller must get the
 * runs it would have got, in order, and no run may stay leased to nobody.
 */
export class TwoLostClaimsCommand extends ModelCommand {
  protected readonly kind = 'two claims in flight, replies lost';

  constructor(
    readonly first: ClaimSpec,
    readonly second: ClaimSpec,
  ) {
    super();
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const confirm = await rig.loseClaimReplies();
    const call = (c: ClaimSpec) => rig.lossy.claim(queuesOf(c.queues), c.count, c.worker, c.offset);
    const [first, second] = await Promise.all([call(this.first), call(this.second)]);
    confirm();
    // One connection: Redis ran them, and their resent copies, in the order they were sent.
    const both = [...queuesOf(this.first.queues), ...queuesOf(this.second.queues)];
    const limited = both.some(
      (queue) => model.caps.has(queue) || model.rateLimits.has(queue) || model.grouped.has(queue),
    );
    const { first: a, second: b } = this;
    applyClaim(model, queuesOf(a.queues), a.count, a.worker, first, limited, a.offset);
    applyClaim(model, queuesOf(b.queues), b.count, b.worker, second, limited, b.offset);
    await syncRateLogs(model, both, rig);
    // Their first copies parked runs the model cannot know run by run: it takes Redis's parked runs.
    if (limited) await syncGroups(model, rig);
  }

  toString(): string {
    return `twoLostClaims(${claimText(this.first)} | ${claimText(this.second)})`;
  }
}

/** Tallies a claim that holds back ready runs of a capped or rate-limited queue (the model predicts how many). */
function noteHeldBack(model: RunModel, queues: readonly QueueName[], rig: ModelRig): void {
  for (const queue of queues) {
    const ready = readyIds(model, queue).length;
    if (model.paused.has(queue) || ready === 0) continue;
    const cap = model.caps.get(queue);
    if (cap !== undefined && cap - runsIn(model, queue, 'running').length < ready) {
      rig.tally.note('claim held back by a cap');
    }
    const max = model.rateLimits.get(queue);
    if (max !== undefined && max - rateLogOf(model, queue).length < ready) {
      rig.tally.note('claim held back by a rate limit');
    }
  }
}

/**
 * After claims whose replies were lost: their first copies logged what they
 * leased (then handed back) in the rate logs, which the model cannot know
 * run by run. Redis's log must hold at least the model's entries, and never
 * more than a limit allows; the model takes the rest as logged now.
 */
async function syncRateLogs(model: RunModel, queues: readonly QueueName[], rig: ModelRig): Promise<void> {
  for (const queue of new Set(queues)) {
    const max = model.rateLimits.get(queue);
    if (max === undefined) continue;
    const log = rateLogOf(model, queue);
    const stored = await rig.rateLogSize(queue);
    assert.ok(stored >= log.length, `the rate log of ${queue} holds ${stored} entries, the model ${log.length}`);
    assert.ok(stored <= Math.max(max, log.length), `the rate log of ${queue} holds ${stored} entries, above ${max}`);
    for (let i = log.length; i < stored; i++) log.push(Date.now());
  }
}

/** A lease to use: the current one of some run, or any ever granted (most of them superseded). */
export interface LeasePick {
  readonly pick: number;
  readonly stale: boolean;
}

function leaseOf(model: RunModel, { pick: n, stale }: LeasePick): LeaseRef {
  const current = currentLeases(model);
  return stale || current.length === 0 ? nth(model.leases, n) : nth(current, n);
}

const ERROR = { errorClass: 'ModelError', message: 'm', stack: 's', attempt: 1 };

export const OUTCOMES: Record<OutcomeKind, Outcome> = {
  successful: { kind: 'successful', returnValue: undefined },
  result: { kind: 'successful', returnValue: '{"n":1}' },
  failed: { kind: 'failed', error: ERROR },
  retry: { kind: 'retry', error: ERROR, delayMs: 0 },
  'retry-later': { kind: 'retry', error: ERROR, delayMs: DEFER_MS },
  quarantine: { kind: 'quarantine', reason: 'invalid-arguments', message: 'm', error: ERROR },
};

/**
 * One acknowledge call: 1..3 outcomes of current or superseded leases, or
 * plain successes of every run a claim leased (one group under its token),
 * then 0..2 start marks. An outcome applies exactly while its lease holds.
 */
export class AcknowledgeCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly outcomes: readonly (LeasePick & { kind: OutcomeKind })[],
    readonly marks: readonly LeasePick[],
    readonly wholeClaim: boolean,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'acknowledge, reply lost' : 'acknowledge';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    let outcomes = this.outcomes.map((o) => ({ lease: leaseOf(model, o), kind: o.kind }));
    const current = currentLeases(model);
    if (this.wholeClaim && current.length > 0) {
      const { token } = nth(current, this.outcomes[0]!.pick);
      outcomes = current.filter((g) => g.token === token).map((lease) => ({ lease, kind: 'successful' }));
    }
    const marks = this.marks.map((m) => leaseOf(model, m));
    // As a worker acknowledges: with its task's result TTL for the outcome, if it declares one.
    const acks: Acknowledgement[] = outcomes.map(({ lease, kind }) => {
      const outcome = OUTCOMES[kind];
      const declared = rig.harness.registry.find(taskOf(lease.id))!.resultTtlMs;
      return { ...lease, outcome, resultTtlMs: overriddenTtl(declared, outcome.kind) };
    });
    const applied = await rig.via(this.through, 'acknowledge', (backend) => backend.acknowledge(acks, marks));
    const kept = model.runs.size;
    const classed = classedIds(model);
    const expected = acknowledgeInModel(model, outcomes, marks, Date.now());
    rig.tally.note('finished run trimmed', kept - model.runs.size);
    rig.tally.note('finished run trimmed from a TTL class', classed.filter((id) => !model.runs.has(id)).length);
    rig.tally.note("run kept for its task's TTL", classedIds(model).filter((id) => !classed.includes(id)).length);
    const what = outcomes.map(({ lease, kind }) => `${kind} ${shown(lease.id)}/${lease.token}`).join(', ');
    assert.deepEqual(applied, expected, `applied, of ${what}`);
    rig.tally.note('outcome applied', expected.filter(Boolean).length);
    rig.tally.note('stale outcome discarded', expected.filter((ok) => !ok).length);
  }

  toString(): string {
    const outcomes = this.outcomes.map((o) => `${o.kind}#${o.pick}${o.stale ? '?' : ''}`).join(' ');
    const marks = this.marks.map((m) => `#${m.pick}${m.stale ? '?' : ''}`).join(' ');
    return `acknowledge[${this.through}](${this.wholeClaim ? 'whole claim' : outcomes}; marks ${marks})`;
  }
}

/**
 * A holder records its start: a suspect's announcement before it runs
 * (`announceStart`: not a recorded start), a start mark alone, or the start
 * marks of every run a consumer holds (sent with its next acknowledge call).
 */
export class StartCommand extends ModelCommand {
  protected readonly kind = 'start';

  constructor(
    readonly lease: LeasePick,
    readonly how: 'announce' | 'start mark' | "consumer's start marks",
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const lease = leaseOf(model, this.lease);
    if (this.how === 'announce') {
      const announced = await rig.backend.announceStart(lease);
      assert.equal(announced, announceInModel(model, lease, Date.now()), `start of ${shown(lease.id)}/${lease.token}`);
      return;
    }
    const worker = model.runs.get(lease.id)?.lease?.worker;
    const leases =
      this.how === 'start mark' || worker === undefined
        ? [lease]
        : currentLeases(model).filter((g) => model.runs.get(g.id)!.lease!.worker === worker);
    // Whether a start mark applied is not told: the state check sees it.
    assert.deepEqual(await rig.backend.acknowledge([], leases), []);
    const now = Date.now();
    for (const g of leases) startInModel(model, g, now);
  }

  toString(): string {
    return `start[${this.how}](#${this.lease.pick}${this.lease.stale ? '?' : ''})`;
  }
}

/** A heartbeat renewing 1..2 leases: each extended while it holds, reported lost otherwise. */
export class RenewCommand extends ModelCommand {
  protected readonly kind = 'renew';

  constructor(readonly leases: readonly LeasePick[]) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const leases = this.leases.map((l) => leaseOf(model, l));
    const heartbeat = { id: 'host-a:1:0', queues: ['q1', 'q2'], concurrency: 1, startedAt: 0, done: 0, held: 1 };
    const renewals = leases.map((lease) => ({ ...lease, leaseTtlMs: LEASE_TTL_MS }));
    const kept = await rig.backend.renew(heartbeat, 60_000, renewals);
    assert.deepEqual(kept, renewInModel(model, leases, Date.now()), 'leases kept');
    // A lease of a paused queue is extended and says so: its worker hands back what it holds there unstarted.
    const paused = kept.filter((state) => state === 'paused').length;
    if (paused > 0) rig.tally.note('renewal answered paused', paused);
  }

  toString(): string {
    return `renew(${this.leases.map((l) => `#${l.pick}${l.stale ? '?' : ''}`).join(' ')})`;
  }
}

/** A stopping consumer hands back a run it never started: READY at its place, uncharged. */
export class ReleaseCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly lease: LeasePick,
    readonly through: Via = 'direct',
  ) {
    super();
    this.kind = through === 'lost' ? 'release, reply lost' : 'release';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const unstarted = runsWith(model, 'running').filter((run) => mayHandBack(run.lease!.flag));
    const lease =
      this.lease.stale || unstarted.length === 0
        ? nth(model.leases, this.lease.pick)
        : leaseRefOf(nth(unstarted, this.lease.pick));
    const [released] = await rig.via(this.through, 'release', (backend) => backend.release([lease]));
    assert.deepEqual([released], releaseInModel(model, [lease], Date.now()), `release of ${shown(lease.id)}`);
  }

  toString(): string {
    return `release[${this.through}](#${this.lease.pick}${this.lease.stale ? '?' : ''})`;
  }
}

/**
 * A task asks to come back later (`context.retryAfter`, `defer.lua`): a
 * current lease (started or not) or a stale one; the run waits deferred,
 * its attempt not charged.
 */
export class DeferCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly lease: LeasePick,
    readonly through: Via = 'direct',
  ) {
    super();
    this.kind = through === 'lost' ? 'retry after, reply lost' : 'retry after';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.leases.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const lease = leaseOf(model, this.lease);
    const [deferred] = await rig.via(this.through, 'defer', (backend) =>
      backend.defer([{ ...lease, delayMs: DEFER_MS }]),
    );
    assert.deepEqual([deferred], deferInModel(model, [lease], Date.now()), `defer of ${shown(lease.id)}`);
    if (deferred) rig.tally.note('run deferred by retryAfter, uncharged');
  }

  toString(): string {
    return `retryAfter[${this.through}](#${this.lease.pick}${this.lease.stale ? '?' : ''})`;
  }
}

/** A holder stalls or dies: its lease's deadline passes (the test's way to move one deadline). */
export class ExpireCommand extends ModelCommand {
  protected readonly kind = 'expire';

  constructor(readonly pick: number) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'running').some((run) => !isPast(run.lease!.deadline, Date.now()));
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const live = runsWith(model, 'running').filter((run) => !isPast(run.lease!.deadline, Date.now()));
    const run = nth(live, this.pick);
    await rig.setScore(run.queue, 'running', run.id, 1);
    run.lease!.deadline = 1;
  }

  toString(): string {
    return `expire(#${this.pick})`;
  }
}
