import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  mismatchMessage,
  PartitionRecord,
  RECORD_EVERY_MS,
  SEEN_WITHIN_MS,
  type PartitionView,
} from './partition-record.js';
import { PartitionRetirement } from './partition-retirement.js';
import type { PartitionSet } from './partition-set.js';
import { PartitionTags } from './partition-tags.js';

/** Longest a store waits for its process to record its count again (see `PartitionLayout.recordIfStale`). */
const STALE_RECORD_WAIT_MS = 1_000;

/** What the layout asks of the queues' caps and rate limits when the span changes (see `PartitionedLimits`). */
export interface SpreadLimits {
  /** Spreads them over the span again (after it changed). */
  spread(): Promise<void>;
  /** Moves the shares of partitions `to`..`from - 1` to partitions below `to`, before these leave the span. */
  shrink(from: number, to: number): Promise<void>;
}

/**
 * Keeps a process's partitions in step with the backend's record: records
 * its count at boot and every {@link RECORD_EVERY_MS}, reads the others',
 * sets the span to the largest (preparing new partitions, under the aliases
 * `PartitionTags` recorded; dropping drained retired ones, see
 * `PartitionRetirement`), and logs a mismatch once.
 */
export class PartitionLayout {
  private readonly logger = new Logger('Threadmill');
  private readonly record: PartitionRecord;
  private readonly tags: PartitionTags;
  private readonly retirement: PartitionRetirement;
  private view: PartitionView;
  private recording: NodeJS.Timeout | undefined;
  /** When this process last recorded its count (`performance.now()`). */
  private recordedAt = -Infinity;
  /** The recording stores wait for, while one is under way (see `recordIfStale`). */
  private recordingNow: Promise<unknown> | undefined;
  /** Partitions below this one are prepared (their keys at this version's layout). */
  private prepared = 1;
  /** The span the limits were last spread over. */
  private spreadOver = 0;
  /** The mismatch last logged, so that it is logged once. */
  private reported = '';

  constructor(
    private readonly set: PartitionSet,
    private readonly limits: SpreadLimits,
  ) {
    const { client } = set.connections;
    const { prefix } = set.part(0).keys;
    const { alias, partitions } = set.settings;
    const home = set.part(0);
    this.record = new PartitionRecord(client, `${prefix}partition-counts`, () => home.redisNow());
    this.tags = new PartitionTags(client, `${prefix}partition-tags`, alias);
    this.retirement = new PartitionRetirement(set, this.record, async (from, to) => {
      await limits.shrink(from, to);
      // Spread again over the span the drop leaves, whatever it is (a count
      // recorded again meanwhile keeps partitions that now have no share).
      this.spreadOver = 0;
    });
    this.view = { partitions, span: partitions, others: [] };
  }

  /** The partition counts this process knows of. */
  get current(): PartitionView {
    return this.view;
  }

  /** Prepares the home partition, then the others, and keeps recording (not an observer's). */
  async prepare(): Promise<void> {
    // Home first: it refuses keys a newer version wrote before anything else is touched.
    await this.set.part(0).prepare();
    await this.refresh();
    if (this.set.settings.observer) return;
    this.recording ??= setInterval(() => void this.refresh().catch(() => undefined), RECORD_EVERY_MS).unref();
    this.set.connections.client.once('end', () => clearInterval(this.recording));
  }

  /**
   * Before a store: a process whose count was last recorded longer ago than
   * half the mismatch window (frozen, or cut off from home) records it again
   * first, so that a run it stores in a partition that only its count keeps
   * in the span is never stored after that count was dropped as stale. Best
   * effort: when home does not answer within a second, the store goes on. Nothing to wait
   * for otherwise (undefined).
   */
  recordIfStale(): Promise<unknown> | undefined {
    if (this.set.settings.observer || performance.now() - this.recordedAt < SEEN_WITHIN_MS / 2) return undefined;
    // One recording for the stores that wait together, and for a second at most: a home
    // master that does not answer that soon is away, and cannot drop a count either.
    this.recordingNow ??= Promise.race([
      this.refresh().catch(() => undefined),
      sleep(STALE_RECORD_WAIT_MS, undefined, { ref: false }),
    ]).finally(() => (this.recordingNow = undefined));
    return this.recordingNow;
  }

  /** Records this process's count (an observer's is not) and reads the others': see the class. */
  async refresh(): Promise<void> {
    const { set } = this;
    if (set.connections.client.status === 'end') return clearInterval(this.recording);
    const { partitions, observer } = set.settings;
    const sentAt = performance.now();
    let view = observer ? await this.record.view(partitions) : await this.record.register(partitions);
    if (!observer) this.recordedAt = sentAt;
    if (view.span > set.aliases.length) set.aliases = await this.tags.aliases(view.span);
    for (; this.prepared < view.span; this.prepared++) await set.part(this.prepared).prepare();
    if (!observer) view = await this.retirement.step(view, set.span);
    set.router.span = view.span;
    this.view = view;
    if (this.spreadOver !== set.span) {
      await this.limits.spread();
      this.spreadOver = set.span;
    }
    const message = mismatchMessage(view);
    if (message !== '' && message !== this.reported) this.logger.warn(message);
    this.reported = message;
  }
}
