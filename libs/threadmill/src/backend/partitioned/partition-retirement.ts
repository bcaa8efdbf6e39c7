import { Logger } from '@nestjs/common';
import { RECORD_EVERY_MS, SEEN_WITHIN_MS, type PartitionRecord, type PartitionView } from './partition-record.js';
import type { PartitionSet } from './partition-set.js';

/**
 * How long a process keeps looking at partitions that left its span: a run
 * stored there by a process that had not yet seen them leave (see
 * `docs/storage.md`, "Partitions") is found within this time.
 */
export const WATCH_DROPPED_MS = SEEN_WITHIN_MS;

/** Partitions `from` to `to - 1`, as text for messages. */
function named(from: number, to: number): string {
  return to - from === 1 ? `partition ${from}` : `partitions ${from}-${to - 1}`;
}

/**
 * Ends the retirement of partitions after the partition count shrank. While
 * the record holds a count above every count recorded within
 * {@link SEEN_WITHIN_MS} (a process with 8 partitions left, processes with 4
 * run), partitions 4 to 7 are retired: no new run goes there, and workers
 * consume them until they are drained. At each refresh a process checks
 * whether they are: once they hold no run at all (none ready, deferred,
 * leased, parked, quarantined, nor finished with its result still kept), it
 * removes the stale counts from the record, and every process's span shrinks
 * to the counts that remain within a refresh (its consumers and broker stop
 * watching those partitions).
 *
 * The removal is one command that removes only counts still stale when it
 * runs: a process with the larger count that records itself meanwhile keeps
 * its count, and one that records itself afterwards (booting, or back from a
 * freeze) adds it again, so every process grows its span back. A process whose
 * span shrank keeps looking at the partitions that left it for
 * {@link WATCH_DROPPED_MS}; a run it finds there (stored by a process that had
 * not yet seen them leave) brings their count back into the record.
 * `docs/storage.md` argues why no run is left where nobody looks.
 */
export class PartitionRetirement {
  private readonly logger = new Logger('Threadmill');
  /** Partitions that left this process's span lately, looked at until `until` (local clock). */
  private left: { from: number; to: number; until: number } | undefined;

  /**
   * @param shrinkLimits moves the caps' and rate limits' shares of partitions
   *   `to`..`from - 1` to the others, before they leave the span; the limits
   *   are spread over the span the drop leaves right after
   */
  constructor(
    private readonly set: PartitionSet,
    private readonly record: PartitionRecord,
    private readonly shrinkLimits: (from: number, to: number) => Promise<void>,
  ) {}

  /**
   * After a refresh read `view` (the span was `span` until then): drops the
   * drained retired partitions, and looks at those that left the span
   * lately. Returns the view to go by.
   */
  async step(view: PartitionView, span: number): Promise<PartitionView> {
    view = await this.dropDrained(view);
    if (view.span < span) {
      this.left = { from: view.span, to: span, until: performance.now() + WATCH_DROPPED_MS };
      this.logger.log(
        `The partition record dropped ${named(view.span, span)} (retired, and drained): this process no longer ` +
          `consumes or routes to them; the span is ${view.span}.`,
      );
      return view;
    }
    const left = this.left;
    if (left === undefined) return view;
    const from = Math.max(left.from, view.span);
    if (from >= left.to || performance.now() > left.until) {
      this.left = undefined;
      return view;
    }
    if (await this.holdsNothing(from, left.to)) return view;
    this.left = undefined;
    // Recorded as last seen before the mismatch window: back in the span, and retired again.
    await this.record.restore(left.to, this.record.now() - SEEN_WITHIN_MS - 1);
    this.logger.warn(
      `Found runs in ${named(from, left.to)} after the partition record dropped them: recorded the count ` +
        `${left.to} again, so that every process consumes them until they are drained.`,
    );
    return this.record.view(view.partitions);
  }

  /**
   * Removes the stale counts above the largest live one from the record, when
   * the partitions they kept in the span hold no run. The record is read here,
   * and the removal takes only counts last seen before this read's window:
   * a count live at the read is never removed, so the partitions that leave
   * the span are among those checked.
   */
  private async dropDrained(view: PartitionView): Promise<PartitionView> {
    // The common case, no retirement under way: nothing more to read.
    if (view.span <= Math.max(view.partitions, ...view.others.map((other) => other.partitions))) return view;
    const readAt = this.record.now();
    const entries = await this.record.read();
    const own = view.partitions;
    const span = Math.max(own, ...entries.map((entry) => entry.partitions));
    const live = Math.max(
      own,
      ...entries.filter((entry) => entry.seenAt >= readAt - SEEN_WITHIN_MS).map((entry) => entry.partitions),
    );
    if (span <= live || span > this.set.aliases.length) return view;
    if (!(await this.holdsNothing(live, span)) || !(await this.takeTurn())) return view;
    await this.shrinkLimits(span, live);
    const after = await this.record.dropStale(own, readAt - SEEN_WITHIN_MS);
    if (after.span < span) {
      this.logger.log(
        `Dropped ${named(after.span, span)} from the partition record: no process with more than ${live} ` +
          `partitions was seen for ${SEEN_WITHIN_MS / 1_000} s, and they hold no run.`,
      );
    }
    return after;
  }

  /**
   * Whether this process is the one to drop retired partitions now: one at a
   * time, as moving the limits' shares (`shrinkLimits`) reads and writes
   * several partitions. The turn (`partition-drop` in home) lapses by itself.
   */
  private async takeTurn(): Promise<boolean> {
    const { client } = this.set.connections;
    const key = `${this.set.part(0).keys.prefix}partition-drop`;
    return (await client.set(key, String(process.pid), 'PX', RECORD_EVERY_MS, 'NX')) === 'OK';
  }

  /**
   * Whether partitions `from` to `to - 1` hold no run at all: no record of a
   * run (fresh, done, or a run hash in any segment of any registered queue)
   * and no lease. See "drained" in `docs/storage.md`.
   */
  private async holdsNothing(from: number, to: number): Promise<boolean> {
    const { client } = this.set.connections;
    const partitions = Array.from({ length: to - from }, (_, i) => from + i);
    const sizes = await Promise.all(
      partitions.flatMap((p) => {
        const { keys } = this.set.part(p);
        return [keys.fresh, keys.done, keys.leases].map((key) => client.hlen(key));
      }),
    );
    if (sizes.some((size) => size > 0)) return false;
    const queues = await this.set.part(0).knownQueues();
    if (queues.length === 0) return true;
    const counts = await Promise.all(partitions.map((p) => this.set.part(p).counts(queues)));
    return counts.every((perQueue) =>
      perQueue.every(
        (c) => c.ready + c.deferred + c.running + c.successful + c.failed + c.quarantined + c.cancelled === 0,
      ),
    );
  }
}
