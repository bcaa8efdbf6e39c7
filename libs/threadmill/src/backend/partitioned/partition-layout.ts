import { Logger } from '@nestjs/common';
import { mismatchMessage, PartitionRecord, RECORD_EVERY_MS, type PartitionView } from './partition-record.js';
import type { PartitionSet } from './partition-set.js';
import { PartitionTags } from './partition-tags.js';

/**
 * Keeps a process's partitions in step with the backend's record: records
 * its count at boot and every {@link RECORD_EVERY_MS}, reads the others',
 * grows the span to the largest (preparing the new partitions, under the
 * aliases `PartitionTags` recorded), and logs a mismatch once.
 */
export class PartitionLayout {
  private readonly logger = new Logger('Threadmill');
  private readonly record: PartitionRecord;
  private readonly tags: PartitionTags;
  private view: PartitionView;
  private recording: NodeJS.Timeout | undefined;
  /** Partitions below this one are prepared (their keys at this version's layout). */
  private prepared = 1;
  /** The span the limits were last spread over. */
  private spreadOver = 0;
  /** The mismatch last logged, so that it is logged once. */
  private reported = '';

  /** @param spreadLimits spreads the queues' caps and rate limits over the span (after it grew) */
  constructor(
    private readonly set: PartitionSet,
    private readonly spreadLimits: () => Promise<void>,
  ) {
    const { client } = set.connections;
    const { prefix } = set.part(0).keys;
    const { alias, partitions } = set.settings;
    this.record = new PartitionRecord(client, `${prefix}partition-counts`);
    this.tags = new PartitionTags(client, `${prefix}partition-tags`, alias);
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

  /** Records this process's count (an observer's is not) and reads the others': see the class. */
  async refresh(): Promise<void> {
    const { set } = this;
    if (set.connections.client.status === 'end') return clearInterval(this.recording);
    const { partitions, observer } = set.settings;
    const view = observer ? await this.record.view(partitions) : await this.record.register(partitions);
    if (view.span > set.aliases.length) set.aliases = await this.tags.aliases(view.span);
    for (; this.prepared < view.span; this.prepared++) await set.part(this.prepared).prepare();
    set.router.span = Math.max(set.router.span, view.span);
    this.view = view;
    if (this.spreadOver !== set.span) {
      await this.spreadLimits();
      this.spreadOver = set.span;
    }
    const message = mismatchMessage(view);
    if (message !== '' && message !== this.reported) this.logger.warn(message);
    this.reported = message;
  }
}
