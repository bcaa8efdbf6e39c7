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
