import assert from 'node:assert/strict';
import { applyClaim } from './lease-transitions.js';
import { ModelCommand, newRun, shown } from './model-command.js';
import { cancelInModel, dequeueInModel, enqueueInModel } from './queue-transitions.js';
import type { ModelRig, Via } from './redis-rig.js';
import { assertMatches } from './state-check.js';
import { assertGroups } from './group-check.js';
import { RATE_WINDOW_MS, taskOf, type QueueName, type RunModel } from './run-model.js';

/** What follows a burst: a parked run cancelled or dequeued, the limit raised or removed (and a claim again). */
export type BurstEnd = 'cancel' | 'dequeue' | 'raise' | 'remove';

/**
 * A burst of one limit group: an operator limits task `task` to one run per
 * window (`rate`) or at once (`cap`), a producer enqueues three runs of its
 * group (key `k1`, or the task whole), and a consumer claims three (its
 * reply lost, or not): one is leased, the others are parked (more, when the
 * group was held already). Then a parked run is cancelled or dequeued, or
 * the limit raised or removed and a second claim un-parks what the group may
 * lease now. Each call is checked against the model as it goes.
 */
export class GroupBurstCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly task: string,
    readonly queue: QueueName,
    readonly limit: 'rate' | 'cap',
    readonly keyed: boolean,
    readonly end: BurstEnd,
    readonly through: Via,
  ) {
    super();
    this.kind = `burst of a limit group${through === 'lost' ? ', claim reply lost' : ''}`;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { task, queue } = this;
    const change = this.limit === 'rate' ? { max: 1 } : { concurrency: 1 };
    await this.setLimit(model, rig, change);
    const group = this.keyed ? `${task}\nk1` : task;
    // New ids of the task's runs (the model picks a run's task by its id).
    const planned = [];
    while (planned.length < 3) {
      const id = `r${model.nextId++}`;
      if (taskOf(id) === task) planned.push({ id, queue, priority: 0, deferred: false, idempotent: false, group });
    }
    const { now, created } = await rig.backend.store(planned.map(newRun));
    assert.deepEqual(created, enqueueInModel(model, planned, now), 'the burst is stored');
    rig.tally.stored += 3;
    await this.verify(model, rig);
    const worker = 'host-a:1:0';
    const claimed = await rig.via(this.through, 'claim', (backend) => backend.claim([queue], 3, worker, 0));
    applyClaim(model, [queue], 3, worker, claimed, false, 0, this.through === 'lost');
    await this.verify(model, rig);
    const parked = planned.filter(({ id }) => model.runs.get(id)?.parked);
    if (this.end === 'cancel' || this.end === 'dequeue') {
      const aim = parked[0] ?? planned[0]!;
      const answer =
        this.end === 'cancel' ? await rig.backend.cancel(aim.id, queue) : await rig.backend.dequeue(aim.id, queue);
      const expected =
        this.end === 'cancel' ? cancelInModel(model, aim.id, queue, Date.now()) : dequeueInModel(model, aim.id, queue);
      assert.deepEqual(answer, expected, `${this.end} of ${shown(aim.id)}`);
      return;
    }
    await this.setLimit(
      model,
      rig,
      this.end === 'raise' ? (this.limit === 'rate' ? { max: 3 } : { concurrency: 3 }) : null,
    );
    const again = await rig.backend.claim([queue], 3, worker, 0);
    applyClaim(model, [queue], 3, worker, again);
  }

  private async setLimit(model: RunModel, rig: ModelRig, change: { max?: number; concurrency?: number } | null) {
    const stored =
      change === null
        ? null
        : {
            ...(change.max !== undefined ? { rate: { max: change.max, perMs: RATE_WINDOW_MS, startSlackMs: 0 } } : {}),
            ...(change.concurrency !== undefined ? { concurrency: change.concurrency } : {}),
          };
    await rig.backend.setTaskLimit(this.task, stored);
    if (change === null) model.taskLimits.delete(this.task);
    else model.taskLimits.set(this.task, change);
  }

  private async verify(model: RunModel, rig: ModelRig): Promise<void> {
    await assertMatches(model, rig);
    await assertGroups(model, rig);
    for (const note of model.notes.splice(0)) rig.tally.note(note);
  }

  toString(): string {
    const { task, queue, limit, keyed, end, through } = this;
    return `groupBurst[${through}](${task}, ${queue}, ${limit}, ${keyed ? 'k1' : 'task'}, then ${end})`;
  }
}
