import assert from 'node:assert/strict';
import { ModelCommand, shown } from './model-command.js';
import type { ModelRig } from './redis-rig.js';
import { isSettled, nth, STATUS_TEXT, type RunModel } from './run-model.js';

/** How long a registration lasts: far longer than a sequence, so none expires in one. */
const REGISTRATION_MS = 10 * 60_000;

/**
 * A process registers runs to wait on (`watch.lua`): each answer must say
 * where the run stands (its fields when settled, missing when no run has the
 * id, pending otherwise), and a run not settled stays registered until a
 * script settles or removes it, which publishes it (checked by `assertPublished`).
 */
export class WatchCommand extends ModelCommand {
  protected readonly kind = 'watch';

  constructor(
    readonly picks: readonly number[],
    readonly unknown: boolean,
  ) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.ids.length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const ids = [...new Set(this.picks.map((pick) => nth(model.ids, pick)))];
    if (this.unknown) ids.push(`unknown-${model.nextId++}`);
    const { states } = await rig.backend.watch(ids, REGISTRATION_MS);
    ids.forEach((id, i) => {
      const run = model.runs.get(id);
      const state = states[i];
      if (!run) {
        // Registered all the same: a waitable enqueue registers its run before it stores it.
        model.watched.add(id);
        return assert.equal(state, 'missing', `watch of ${shown(id)}, which no run has`);
      }
      if (isSettled(run)) {
        assert.ok(state && state !== 'missing', `watch of settled ${shown(id)} answers its fields`);
        return assert.equal(state.status, STATUS_TEXT[run.status], `status watch read of ${shown(id)}`);
      }
      assert.equal(state, null, `watch of pending ${shown(id)} (${run.status})`);
      model.watched.add(id);
    });
  }

  toString(): string {
    return `watch(${this.picks.map((pick) => `#${pick}`).join(', ')}${this.unknown ? ', unknown' : ''})`;
  }
}
