import assert from 'node:assert/strict';
import { announceInModel, applyClaim, startInModel } from './lease-transitions.js';
import { idleQueuesOf, ModelCommand, newRun, planRuns } from './model-command.js';
import {
  brokerPassInModel,
  enqueueInModel,
  requeueInModel,
  restoreInModel,
  shiftTimesInModel,
  snapshotInModel,
} from './queue-transitions.js';
import { until, type ModelRig } from './redis-rig.js';
import { assertMatches } from './state-check.js';
import {
  isPast,
  leaseRefOf,
  MAX_RECOVERIES,
  MINUTE,
  PAST_RESULT_TTL_MS,
  classedIds,
  classOf,
  ttlOf,
  nth,
  runsWith,
  type QueueName,
  type RunModel,
} from './run-model.js';
import { claimableIds } from './claim-simulation.js';

/** Commands of time and failure: broker passes, due and expired times, clock steps, restarts, dead consumers. */

/** A broker pass against the model's (see `brokerPassInModel`). */
export async function brokerPass(model: RunModel, rig: ModelRig): Promise<void> {
  const reaped = rig.broker.reaped;
  const classed = classedIds(model);
  const cancelled = runsWith(model, 'cancelled').map((run) => run.id);
  await rig.broker.pass();
  const expected = brokerPassInModel(model, Date.now());
  rig.tally.note('finished run trimmed from a TTL class', classed.filter((id) => !model.runs.has(id)).length);
  assert.equal(rig.broker.reaped - reaped, expected.reaped, 'started attempts whose expiry the broker settled');
  rig.tally.note('started attempt reaped, charged', expected.reaped);
  rig.tally.note('quarantined at maxRecoveries', expected.quarantined);
  rig.tally.note('started attempt reaped, FAILED (no retry policy)', expected.failed);
  rig.tally.note('unstarted lease expired, uncharged', expected.returned - expected.announced);
  rig.tally.note('announced lease expired, a recovery, uncharged', expected.announced);
  rig.tally.note('deferred run promoted', expected.promoted);
  rig.tally.note('finished run trimmed', expected.trimmed);
  rig.tally.note('cancelled run trimmed', cancelled.filter((id) => !model.runs.has(id)).length);
}

/** A broker pass: promotes due deferred runs, reaps expired leases, trims expired results. */
export class BrokerPassCommand extends ModelCommand {
  protected readonly kind = 'broker pass';

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    await brokerPass(model, rig);
  }

  toString(): string {
    return 'brokerPass';
  }
}

/** A deferred run's due time passes; a broker pass then promotes it. */
export class MakeDueCommand extends ModelCommand {
  protected readonly kind = 'make due';

  constructor(readonly pick: number) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'deferred').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const run = nth(runsWith(model, 'deferred'), this.pick);
    await rig.setScore(run.queue, 'deferred', run.id, 1);
    run.dueAt = 1;
    await brokerPass(model, rig);
  }

  toString(): string {
    return `makeDue(#${this.pick})`;
  }
}

/**
 * A finished run's result TTL passes (its finish time moves back past it),
 * or that of every finished run of its queue and index: a broker pass (at
 * once, or later), or the next outcome of that kind in its queue, trims them.
 */
export class MakeTrimmableCommand extends ModelCommand {
  protected readonly kind = 'make trimmable';

  constructor(
    readonly pick: number,
    readonly all: boolean,
    readonly thenPass: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'successful', 'failed').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const chosen = nth(runsWith(model, 'successful', 'failed'), this.pick);
    const status = chosen.status as 'successful' | 'failed';
    // The runs of one index: of the chosen run's outcome and TTL class.
    const member = classOf(chosen, status);
    const sameIndex = runsWith(model, status).filter(
      (run) => run.queue === chosen.queue && classOf(run, status) === member,
    );
    let runs = this.all ? sameIndex : [chosen];
    if (status === 'successful' && !this.all) {
      // The successful index is in finish order: the runs that finished
      // before this one expire with it (lua/includes/successful-index.lua).
      const order = await rig.successfulOrder(chosen.queue, member);
      runs = order.slice(0, order.indexOf(chosen.id) + 1).map((id) => model.runs.get(id)!);
    }
    for (const run of runs) {
      const ttl = ttlOf(run, status);
      const stored = await rig.score(run.queue, status, run.id, member);
      // Past its TTL by PAST_RESULT_TTL_MS at least: clock steps may have moved
      // the finish time ahead, so that one TTL back from it would land at now.
      const to = Math.min(stored - ttl - PAST_RESULT_TTL_MS, Date.now() - ttl - PAST_RESULT_TTL_MS);
      await rig.setScore(run.queue, status, run.id, to, member);
      run.finishedAt! -= stored - to;
    }
    if (this.thenPass) await brokerPass(model, rig);
  }

  toString(): string {
    return `makeTrimmable(#${this.pick}${this.all ? ', all of its index' : ''}${this.thenPass ? ', then a pass' : ''})`;
  }
}

/**
 * The clock steps, forward or back, by 45 minutes or 3 hours: every time the
 * scripts compare with now moves the other way. Forward, leases may expire,
 * deferred runs come due and results expire; back, the opposite.
 */
export class ClockStepCommand extends ModelCommand {
  protected readonly kind = 'clock step';

  constructor(readonly stepMs: number) {
    super();
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    await rig.shiftTimes(-this.stepMs);
    shiftTimesInModel(model, -this.stepMs);
  }

  toString(): string {
    return `clockStep(${this.stepMs / MINUTE} min)`;
  }
}

/** A snapshot (RDB, or the AOF so far) of every key of the backend, to restart from later. */
export class SnapshotCommand extends ModelCommand {
  protected readonly kind = 'snapshot';

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    await rig.takeSnapshot();
    snapshotInModel(model);
  }

  toString(): string {
    return 'snapshot';
  }
}

/**
 * Redis restarts from the last snapshot and forgets every write since: the
 * runs are the snapshot's again, leases granted since are superseded (their
 * outcomes must be stale), and new claims must still mint new tokens.
 */
export class RestoreCommand extends ModelCommand {
  protected readonly kind = 'restart from an older snapshot';

  override check(model: Readonly<RunModel>): boolean {
    return model.snapshot !== undefined;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    await rig.restoreSnapshot();
    restoreInModel(model);
  }

  toString(): string {
    return 'restore';
  }
}

/**
 * A busy consumer dies: every lease it holds passes its deadline, and a
 * broker pass settles them (unstarted ones back uncharged, started ones
 * charged). It may first have started everything it held, its start marks
 * sent (a worker SIGKILLed mid-batch).
 */
export class ConsumerDeathCommand extends ModelCommand {
  protected readonly kind = 'busy consumer dead';

  constructor(
    readonly worker: string,
    readonly startedFirst: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'running').some((run) => run.lease!.worker === this.worker);
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const now = Date.now();
    const held = runsWith(model, 'running').filter(
      (r) => r.lease!.worker === this.worker && !isPast(r.lease!.deadline, now),
    );
    if (this.startedFirst) {
      const leases = held.map(leaseRefOf);
      await rig.backend.acknowledge([], leases);
      for (const lease of leases) startInModel(model, lease, now);
    }
    for (const run of held) {
      await rig.setScore(run.queue, 'running', run.id, 1);
      run.lease!.deadline = 1;
    }
    await brokerPass(model, rig);
  }

  toString(): string {
    return `consumerDeath(${this.worker}${this.startedFirst ? ', after starting' : ''})`;
  }
}

/**
 * A poison run: the first ready run of a queue kills every consumer that
 * starts it. Each time, a consumer claims it, announces its start (as a
 * suspect does, before it runs) or records it (a start mark) and dies; a
 * broker pass counts a recovery, charges a recorded attempt and retries it,
 * hands an announced one back uncharged, and quarantines the run at
 * `MAX_RECOVERIES`.
 * Then an operator may fix the task and requeue the run: no longer a suspect.
 */
export class PoisonRunCommand extends ModelCommand {
  protected readonly kind = 'poison run';

  constructor(
    readonly queue: QueueName,
    readonly worker: string,
    readonly thenRequeue: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return claimableIds(model, this.queue).length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const id = claimableIds(model, this.queue)[0]!;
    // Until it is quarantined, or another run (an expired lease the pass handed back) comes first.
    for (let death = 0; claimableIds(model, this.queue)[0] === id && death <= MAX_RECOVERIES; death++) {
      const claimed = await rig.backend.claim([this.queue], 1, this.worker, 0);
      applyClaim(model, [this.queue], 1, this.worker, claimed);
      const lease = { id, queue: this.queue, token: claimed[0]!.token };
      if (death % 2 === 0) {
        assert.ok(await rig.backend.announceStart(lease));
        announceInModel(model, lease, Date.now());
      } else {
        await rig.backend.acknowledge([], [lease]);
        startInModel(model, lease, Date.now());
      }
      await rig.setScore(this.queue, 'running', id, 1);
      model.runs.get(id)!.lease!.deadline = 1;
      await brokerPass(model, rig);
      await assertMatches(model, rig);
    }
    if (this.thenRequeue && model.runs.get(id)?.status === 'quarantined') {
      const answer = await rig.backend.requeue(id, this.queue);
      assert.deepEqual(answer, requeueInModel(model, id, this.queue), `requeue of ${id}`);
      rig.tally.note('requeue of a suspect');
    }
  }

  toString(): string {
    return `poisonRun(${this.queue}, ${this.worker}${this.thenRequeue ? ', then requeued' : ''})`;
  }
}

/**
 * A consumer dies while it waits (its connection closes with its claim
 * unread behind the wait): runs enqueued then must not be leased to it.
 */
export class DeadWaiterCommand extends ModelCommand {
  protected readonly kind = 'consumer dead while waiting';

  constructor(readonly queues: number) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return idleQueuesOf(model, this.queues) !== undefined;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const queues = idleQueuesOf(model, this.queues)!;
    const waiter = rig.backend.claimWaiter(queues, 'host-dead:9:0');
    const waiting = waiter.claim(2, 0, 10_000);
    let answered = false;
    void waiting.finally(() => (answered = true)).catch(() => undefined);
    let blocked: string[] = [];
    await until('the consumer waits', async () => {
      blocked = await rig.blockedWaits();
      return answered || blocked.length > 0;
    });
    await waiter.close();
    for (const id of blocked) await until(`Redis closed connection ${id}`, () => rig.clientGone(id));
    // A marker a dequeue left may have ended the wait at once: nothing was ready, so nothing was leased.
    assert.deepEqual(await waiting, [], 'what the dead consumer claimed');
    const spec = { id: 'new', pick: 0, queue: queues[0]!, priority: 0, deferred: false, idempotent: false } as const;
    const planned = planRuns(model, [{ ...spec, style: 'plain' }]);
    const { now, created } = await rig.backend.store(planned.map(newRun));
    assert.deepEqual(created, enqueueInModel(model, planned, now));
    rig.tally.stored += 1;
  }

  toString(): string {
    return `deadWaiter(${this.queues})`;
  }
}
