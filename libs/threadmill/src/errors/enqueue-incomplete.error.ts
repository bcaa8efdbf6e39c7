import type { TaskResult } from '../records/task-result.js';
import { ThreadmillError } from './threadmill.error.js';

/**
 * An `enqueueMany(items, { atomic: false })` stopped part way: an item was
 * invalid, or Redis failed, after earlier chunks were stored. Nothing is
 * hidden: `results` holds, per item, the stored run, or `null` for an item
 * that was not stored. Enqueue the `null` items again once the cause is fixed.
 *
 * When the cause is a lost connection, a chunk in flight may have been
 * stored although its reply never came (its items are `null` here, as in
 * any enqueue whose reply is lost): give items an `id` when a second
 * enqueue must not store them twice.
 */
export class EnqueueIncompleteError extends ThreadmillError {
  /** How many items were stored. */
  readonly storedCount: number;

  constructor(
    /** One entry per item, in order: the stored run, or `null`. */
    readonly results: readonly (TaskResult | null)[],
    cause: unknown,
    /**
     * Stored runs whose chunk no replica confirmation covers, with
     * `confirmEnqueues` (see `UnconfirmedEnqueueError`); empty without it.
     */
    readonly unconfirmedIds: readonly string[] = [],
  ) {
    const storedCount = results.reduce((n, result) => (result ? n + 1 : n), 0);
    const reason = cause instanceof Error ? cause.message : String(cause);
    const unconfirmed =
      unconfirmedIds.length === 0
        ? ''
        : `${unconfirmedIds.length} of the stored runs are not confirmed by replicas (\`unconfirmedIds\`: see ` +
          'UnconfirmedEnqueueError). ';
    super(
      `enqueueMany stored ${storedCount} of ${results.length} runs, then stopped: ${reason} ` +
        'The stored runs stay enqueued; `results` holds them (null for each item not stored). ' +
        unconfirmed +
        'Fix the cause and enqueue the null items again.',
      { cause },
    );
    this.storedCount = storedCount;
  }
}
