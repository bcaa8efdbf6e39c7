import assert from 'node:assert/strict';
import { ModelCommand } from './model-command.js';
import type { ModelRig, Via } from './redis-rig.js';
import { RATE_WINDOW_MS, type QueueName, type RunModel } from './run-model.js';

/** What a limit command sets: a queue's cap or rate limit (`max` runs per window), or removes it (null). */
export type LimitChange = { readonly kind: 'cap' | 'rate'; readonly value: number | null };

/**
 * An operator sets or removes a queue's concurrency cap (`cap.lua`) or rate
 * limit (`rate.lua`, `max` runs per {@link RATE_WINDOW_MS}, no start slack).
 * From then on the model's claims lease no more of the queue's runs than
 * the cap leaves room for beside its running runs, and the limit beside its
 * rate log's entries in the window (see `roomOf`). Both are idempotent: a
 * resent copy of a call whose reply was lost sets the same value again (and
 * reports it as the previous one).
 */
export class LimitCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly queue: QueueName,
    readonly change: LimitChange,
    readonly through: Via,
  ) {
    super();
    const what = change.kind === 'cap' ? 'cap' : 'rate limit';
    this.kind = `${change.value === null ? 'remove' : 'set'} ${what}${through === 'lost' ? ', reply lost' : ''}`;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { queue, change, through } = this;
    const { kind, value } = change;
    const held = kind === 'cap' ? model.caps : model.rateLimits;
    const before = held.get(queue) ?? null;
    const previous =
      kind === 'cap'
        ? (await rig.via(through, 'cap', (backend) => backend.setConcurrencyCap(queue, value))).previous
        : ((
            await rig.via(through, 'rate', (backend) =>
              backend.setRateLimit(
                queue,
                value === null ? null : { max: value, perMs: RATE_WINDOW_MS, startSlackMs: 0 },
              ),
            )
          ).previous?.max ?? null);
    // The first copy changed it; a resent copy finds the new value.
    assert.equal(previous, through === 'direct' ? before : value, `the previous ${kind} of ${queue}`);
    if (value === null) held.delete(queue);
    else held.set(queue, value);
  }

  toString(): string {
    return `${this.change.kind}[${this.through}](${this.queue}, ${this.change.value})`;
  }
}

/** What a task limit command sets: `max` runs per window and/or a concurrency, per limit group; or null to remove it. */
export type TaskLimitChange = { readonly max?: number; readonly concurrency?: number } | null;

/**
 * An operator sets or removes a task's limit (`task-limit.lua`), per limit
 * group (the task, or the task and a key): `max` runs per
 * {@link RATE_WINDOW_MS} (no start slack) and/or a concurrency. From then on
 * the model's claims lease a run of one of its groups only while the group
 * has room, and park the others (`simulateClaim`); every group becomes due,
 * so a higher limit lets parked runs in at the next claim. Idempotent: a
 * resent copy sets the same value again (and reports it as the previous one).
 */
export class TaskLimitCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly task: string,
    readonly change: TaskLimitChange,
    readonly through: Via,
  ) {
    super();
    this.kind = `${change === null ? 'remove' : 'set'} task limit${through === 'lost' ? ', reply lost' : ''}`;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { task, change, through } = this;
    const before = model.taskLimits.get(task) ?? null;
    const stored =
      change === null
        ? null
        : {
            ...(change.max !== undefined ? { rate: { max: change.max, perMs: RATE_WINDOW_MS, startSlackMs: 0 } } : {}),
            ...(change.concurrency !== undefined ? { concurrency: change.concurrency } : {}),
          };
    const { previous } = await rig.via(through, 'taskLimit', (backend) => backend.setTaskLimit(task, stored));
    const read = previous && {
      ...(previous.rate ? { max: previous.rate.max } : {}),
      ...(previous.concurrency !== undefined ? { concurrency: previous.concurrency } : {}),
    };
    // The first copy changed it; a resent copy finds the new value.
    assert.deepEqual(read, through === 'direct' ? before : change, `the previous limit of ${task}`);
    if (change === null) model.taskLimits.delete(task);
    else model.taskLimits.set(task, change);
  }

  toString(): string {
    return `taskLimit[${this.through}](${this.task}, ${JSON.stringify(this.change)})`;
  }
}
