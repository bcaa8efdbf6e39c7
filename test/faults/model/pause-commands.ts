import assert from 'node:assert/strict';
import { ModelCommand } from './model-command.js';
import type { ModelRig, Via } from './redis-rig.js';
import type { QueueName, RunModel } from './run-model.js';

/**
 * An operator pauses or resumes a queue (`pause.lua`, `resume.lua`). From
 * then on the model's claims take none of a paused queue's runs (see
 * `claimableIds`), whatever else happens: enqueues, promotions, hand-backs,
 * retries and restarts from an older snapshot (which bring back the flag as
 * the snapshot held it). Both are idempotent: a resent copy of a call whose
 * reply was lost finds its work done and answers that it changed nothing.
 */
export class PauseCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly queue: QueueName,
    readonly action: 'pause' | 'resume',
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? `${action}, reply lost` : action;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { queue, action, through } = this;
    const was = model.paused.has(queue);
    const { changed } = await rig.via(through, action, (backend) =>
      action === 'pause' ? backend.pause(queue) : backend.resume(queue),
    );
    // The first copy made the change, if there was one to make; a resent copy finds it made.
    const expected = through === 'direct' && was !== (action === 'pause');
    assert.equal(changed, expected, `${action} of ${queue} (paused before: ${was}) changed it`);
    if (action === 'pause') model.paused.add(queue);
    else model.paused.delete(queue);
  }

  toString(): string {
    return `${this.action}[${this.through}](${this.queue})`;
  }
}
