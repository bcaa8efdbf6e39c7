import type { StoreOutcome } from '../records/backend-records.js';
import { ThreadmillError } from './threadmill.error.js';

/** What an {@link UnconfirmedEnqueueError} is made of. */
type UnconfirmedStore = Pick<
  UnconfirmedEnqueueError,
  'runIds' | 'unconfirmedIds' | 'acknowledged' | 'replicas' | 'timeoutMs' | 'outcome'
>;

/** Most ids a message lists. */
const LISTED = 5;

/**
 * An enqueue stored its runs on the Redis master, but fewer replicas than
 * `confirmEnqueues.replicas` acknowledged them within its `timeoutMs` (a
 * replica down or lagging, or the connection lost before the confirmation
 * came). Nothing is undone: the runs are stored and run as usual, unless the
 * master fails before its replicas copy them, and then they are lost.
 *
 * To be sure, enqueue them again with the same `id` (`{ id: runId }`; for a
 * run that had a dedupe key, the same call again): a run that is still
 * stored is not stored twice, and the new call is confirmed once replicas
 * hold it. Or, once the master's replicas are back (or a replica took over),
 * read `getResult(id)`: a run not found was lost.
 */
export class UnconfirmedEnqueueError extends ThreadmillError {
  /** The run each item of the call stands for, in order: its own, or the one its dedupe key answered with. */
  readonly runIds: readonly string[];
  /** Those of `runIds` whose store no replica confirmation covers. */
  readonly unconfirmedIds: readonly string[];
  /** Fewest replicas that acknowledged, over the masters that did not confirm (0 when the confirmation failed). */
  readonly acknowledged: number;
  /** How many replicas `confirmEnqueues` asks for. */
  readonly replicas: number;
  /** How long the store waited for them, in ms. */
  readonly timeoutMs: number;
  /** What the store answered per item (set by a backend; what `TaskQueue` builds its results from). */
  readonly outcome?: StoreOutcome;

  constructor(store: UnconfirmedStore, cause?: unknown) {
    const { unconfirmedIds: ids, acknowledged, replicas, timeoutMs } = store;
    const listed = ids.slice(0, LISTED).join(', ') + (ids.length > LISTED ? ', …' : '');
    const why =
      cause === undefined
        ? ''
        : ` (the confirmation failed: ${cause instanceof Error ? cause.message : String(cause)})`;
    super(
      `${ids.length} run(s) (${listed}) are stored on the Redis master, but ${acknowledged} of the ${replicas} ` +
        `replica(s) that confirmEnqueues asks for acknowledged them within ${timeoutMs} ms${why}. They are not ` +
        'undone and run as usual, unless the master fails before its replicas copy them. To be sure, enqueue them ' +
        'again with the same `id` (for a run with a dedupe key, the same call again): a run still stored is not ' +
        'stored twice, and the call is confirmed once replicas hold it. Or read getResult(id) once the replicas ' +
        'are back: a run not found was lost.',
      { cause },
    );
    this.runIds = store.runIds;
    this.unconfirmedIds = ids;
    this.acknowledged = acknowledged;
    this.replicas = replicas;
    this.timeoutMs = timeoutMs;
    if (store.outcome) this.outcome = store.outcome;
  }

  /**
   * One error for a call whose stores (partitions, chunks) were not all
   * confirmed: `runIds` are the whole call's, `parts` its unconfirmed stores.
   * @internal
   */
  static combine(
    runIds: readonly string[],
    parts: readonly UnconfirmedEnqueueError[],
    outcome?: StoreOutcome,
  ): UnconfirmedEnqueueError {
    const [first] = parts;
    return new UnconfirmedEnqueueError(
      {
        runIds,
        unconfirmedIds: parts.flatMap((part) => part.unconfirmedIds),
        acknowledged: Math.min(...parts.map((part) => part.acknowledged)),
        replicas: first!.replicas,
        timeoutMs: first!.timeoutMs,
        outcome,
      },
      parts.find((part) => part.cause !== undefined)?.cause,
    );
  }

  /**
   * The share of items `start` to `end` (exclusive) of the call, for one of
   * the requests a coalesced store carried; undefined when the share's runs
   * were all confirmed (another partition's master did not confirm).
   * @internal
   */
  share(start: number, end: number): UnconfirmedEnqueueError | undefined {
    const runIds = this.runIds.slice(start, end);
    const unconfirmed = new Set(this.unconfirmedIds);
    const unconfirmedIds = runIds.filter((id) => unconfirmed.has(id));
    if (unconfirmedIds.length === 0) return undefined;
    const { acknowledged, replicas, timeoutMs } = this;
    return new UnconfirmedEnqueueError({ runIds, unconfirmedIds, acknowledged, replicas, timeoutMs }, this.cause);
  }
}
