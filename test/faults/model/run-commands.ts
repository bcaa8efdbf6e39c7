import assert from 'node:assert/strict';
import { ModelCommand, newRun, oneOrderOf, planRuns, shown, specsText, type RunSpec } from './model-command.js';
import { dequeueInModel, enqueueInModel, purgeInModel, requeueInModel } from './queue-transitions.js';
import type { ModelRig, Via } from './redis-rig.js';
import { classOf, nth, QUEUES, runsWith, type QueueName, type RunModel, type RunStatus } from './run-model.js';

/** A purge's chunk in the model: a few entries, so that a purge of its small queues takes several calls. */
const PURGE_CHUNK = { chunkSize: 3 };

/** Commands on runs as producers and operators see them: enqueue, dequeue, requeue, purge. */

/**
 * Stores 1..4 runs: new ids, ids whose run left (possibly into the other
 * queue), and ids that have a run (refused).
 */
export class EnqueueCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly items: readonly RunSpec[],
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'enqueue, reply lost' : 'enqueue';
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const planned = planRuns(model, this.items);
    const elsewhere = planned.filter((run) => !model.runs.has(run.id) && model.lastQueue.get(run.id) !== run.queue);
    rig.tally.note('id reused in another queue', elsewhere.filter((run) => model.lastQueue.has(run.id)).length);
    const { now, created } = await rig.via(this.through, 'enqueue', (backend) => backend.store(planned.map(newRun)));
    // A resent copy answers as the first: a generated id it finds stored is
    // its own, and a call holding caller-chosen ids recalls its first answer.
    const expected = enqueueInModel(model, planned, now);
    assert.deepEqual(created, expected, `created, of ${planned.map((run) => shown(run.id)).join(', ')}`);
    rig.tally.stored += expected.filter(Boolean).length;
  }

  toString(): string {
    return `enqueue[${this.through}](${specsText(this.items)})`;
  }
}

/** Which run an operator's call names: a run it may act on, any id, or a run of the other queue. */
export type Target = 'fitting' | 'any' | 'other queue';

/** The id and queue a call names, chosen against the model. */
function target(model: RunModel, fitting: RunStatus[], how: Target, n: number): { id: string; queue: QueueName } {
  const runs = runsWith(model, ...fitting);
  if (how === 'fitting' && runs.length > 0) return nth(runs, n);
  const id = nth(model.ids, n);
  const queue = model.runs.get(id)?.queue ?? nth(QUEUES, n);
  return { id, queue: how === 'other queue' ? QUEUES.find((q) => q !== queue)! : queue };
}

/** Cancels a pending run; a leased or finished run, or one of another queue, is refused as it is. */
export class DequeueCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly how: Target,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'dequeue, reply lost' : 'dequeue';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.ids.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { id, queue } = target(model, ['ready', 'deferred'], this.how, this.pick);
    const answer = await rig.via(this.through, 'dequeue', (backend) => backend.dequeue(id, queue));
    assert.deepEqual(answer, dequeueInModel(model, id, queue), `dequeue of ${shown(id)} from ${queue}`);
  }

  toString(): string {
    return `dequeue[${this.through}](#${this.pick}, ${this.how})`;
  }
}

/** Sends a FAILED, QUARANTINED or CANCELLED run back to READY; anything else, or another queue's run, is refused. */
export class RequeueCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly how: Target,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'requeue, reply lost' : 'requeue';
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.ids.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    // Every other pick among failed runs only: quarantines outnumber failures, and
    // failures kept for their task's TTL (in an index of their class) must come back too.
    const fitting: RunStatus[] = this.pick % 2 === 0 ? ['failed'] : ['failed', 'quarantined', 'cancelled'];
    const { id, queue } = target(model, fitting, this.how, Math.floor(this.pick / 2));
    const before = model.runs.get(id);
    const suspect = (before?.recoveries ?? 0) > 0;
    const classed = before?.status === 'failed' && classOf(before, 'failed') !== undefined;
    const answer = await rig.via(this.through, 'requeue', (backend) => backend.requeue(id, queue));
    assert.deepEqual(answer, requeueInModel(model, id, queue), `requeue of ${shown(id)} in ${queue}`);
    if (answer.requeued) rig.tally.note(suspect ? 'requeue of a suspect' : 'requeue');
    if (answer.requeued && answer.status === 'CANCELLED') rig.tally.note('requeue of a cancelled run');
    if (answer.requeued && classed) rig.tally.note("requeue of a failed run kept for its task's TTL");
  }

  toString(): string {
    return `requeue[${this.through}](#${this.pick}, ${this.how})`;
  }
}

/** Removes every run of a queue, leased ones included; the other queue's runs stay, whatever their ids. */
export class PurgeCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly queue: QueueName,
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'purge, reply lost' : 'purge';
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const cancelled = runsWith(model, 'cancelled').filter((run) => run.queue === this.queue).length;
    // Chunks of a few entries: the model's small queues are purged in several
    // calls, each of which may lose its reply, as a large queue's are.
    const removed = await rig.via(this.through, 'purge', (backend) => backend.purge(this.queue, PURGE_CHUNK));
    assert.equal(removed, purgeInModel(model, this.queue), `runs purged from ${this.queue}`);
    rig.tally.note('cancelled run purged', cancelled);
  }

  toString(): string {
    return `purge[${this.through}](${this.queue})`;
  }
}

/**
 * An operator moves a pending run to the other queue: dequeued, then its id
 * enqueued there; then maybe purges the old queue. A dequeue from the ready
 * list leaves a dead place naming the id in the old queue: a claim or purge
 * of that queue meeting it must leave the id's new run alone.
 */
export class MoveCommand extends ModelCommand {
  protected readonly kind = 'move to the other queue';

  constructor(
    readonly pick: number,
    readonly thenPurge: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'ready', 'deferred').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const run = nth(runsWith(model, 'ready', 'deferred'), this.pick);
    const answer = await rig.backend.dequeue(run.id, run.queue);
    assert.deepEqual(answer, dequeueInModel(model, run.id, run.queue), `dequeue of ${shown(run.id)}`);
    const into = QUEUES.find((queue) => queue !== run.queue)!;
    const planned = [{ ...run, queue: into, deferred: run.status === 'deferred', idempotent: true }];
    const { now, created } = await rig.backend.store(planned.map(newRun));
    assert.deepEqual(created, enqueueInModel(model, planned, now), `enqueue of ${shown(run.id)} into ${into}`);
    rig.tally.note('id reused in another queue');
    if (this.thenPurge) {
      const removed = await rig.backend.purge(run.queue, PURGE_CHUNK);
      assert.equal(removed, purgeInModel(model, run.queue), `runs purged from ${run.queue}`);
    }
  }

  toString(): string {
    return `move(#${this.pick}${this.thenPurge ? ', then purge' : ''})`;
  }
}

/**
 * Which call of a race goes on the direct connection, the other going
 * through the proxy's extra hop: it mostly, not always, reaches Redis first.
 */
export type Lead = 'operator' | 'enqueue';

/**
 * A purge and an enqueue race on two connections: one into the purged queue
 * (new, free or taken ids of it) or into the other. Whichever ran first, the
 * answers and the state must be that order's.
 */
export class PurgeRaceCommand extends ModelCommand {
  protected readonly kind = 'purge racing an enqueue';

  constructor(
    readonly queue: QueueName,
    readonly items: readonly RunSpec[],
    readonly lead: Lead,
  ) {
    super();
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const planned = planRuns(model, this.items);
    const [operator, producer] = this.lead === 'operator' ? [rig.backend, rig.lossy] : [rig.lossy, rig.backend];
    const [removed, { now, created }] = await Promise.all([
      operator.purge(this.queue),
      producer.store(planned.map(newRun)),
    ]);
    const order = oneOrderOf(model, {
      'purge, then enqueue': (copy) => {
        assert.equal(removed, purgeInModel(copy, this.queue));
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
      },
      'enqueue, then purge': (copy) => {
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
        assert.equal(removed, purgeInModel(copy, this.queue));
      },
    });
    rig.tally.note(`${this.kind}: ${order}`);
  }

  toString(): string {
    return `purgeRace(${this.queue}, ${specsText(this.items)}, ${this.lead} first)`;
  }
}

/**
 * A dequeue of a pending run races an enqueue of its id (into either queue)
 * beside other runs: dequeued first, the id is free and stored anew; stored
 * first, the enqueue is refused and the dequeue removes the run.
 */
export class DequeueRaceCommand extends ModelCommand {
  protected readonly kind = 'dequeue racing an enqueue';

  constructor(
    readonly pick: number,
    readonly into: QueueName,
    readonly items: readonly RunSpec[],
    readonly lead: Lead,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return runsWith(model, 'ready', 'deferred').length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { id, queue } = nth(runsWith(model, 'ready', 'deferred'), this.pick);
    const again = { id, queue: this.into, priority: 0, deferred: false, idempotent: true };
    const planned = [again, ...planRuns(model, this.items).filter((run) => run.id !== id)];
    const [operator, producer] = this.lead === 'operator' ? [rig.backend, rig.lossy] : [rig.lossy, rig.backend];
    const [answer, { now, created }] = await Promise.all([
      operator.dequeue(id, queue),
      producer.store(planned.map(newRun)),
    ]);
    const order = oneOrderOf(model, {
      'dequeue, then enqueue': (copy) => {
        assert.deepEqual(answer, dequeueInModel(copy, id, queue));
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
      },
      'enqueue, then dequeue': (copy) => {
        assert.deepEqual(created, enqueueInModel(copy, planned, now));
        assert.deepEqual(answer, dequeueInModel(copy, id, queue));
      },
    });
    rig.tally.note(`${this.kind}: ${order}`);
  }

  toString(): string {
    return `dequeueRace(#${this.pick} into ${this.into}, ${specsText(this.items)}, ${this.lead} first)`;
  }
}
