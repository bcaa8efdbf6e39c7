import { Logger } from '@nestjs/common';
import type { Acknowledgement, LeaseRef } from '../task-backend.js';
import { groupByPartition } from './partition-groups.js';
import type { PartitionSet } from './partition-set.js';

/** Least time between two warnings of acknowledgements that some partitions did not answer. */
const WARN_EVERY_MS = 10_000;

/** One acknowledgement batch, as split by partition at its first send, with what each partition answered. */
interface BatchCall {
  /** Partition → the batch's outcomes there, and their places in the batch (the same arrays at every send). */
  readonly acks: Map<number, { readonly items: Acknowledgement[]; readonly places: readonly number[] }>;
  /** Partition → the start marks that go there. */
  readonly starts: Map<number, LeaseRef[]>;
  /** Per outcome: applied, stale, or undefined while its partition has not answered. */
  readonly applied: (boolean | undefined)[];
  /** Partitions that answered. */
  readonly answered: Set<number>;
}

/**
 * A worker's acknowledgements over a partitioned backend: each batch goes
 * out as one call per partition its runs (and start marks) are in, in
 * parallel, to the partition that granted each lease. A partition that does
 * not answer (its master is away) leaves its outcomes unanswered (undefined),
 * while the others' answers stand: its worker settles those and sends the
 * batch again, and then only the partitions that have not answered are
 * called, each with the very items of its first call, so that a partition
 * that ran the first copy recognises the second (its call id is the same).
 */
export class PartitionedAcknowledgements {
  private readonly logger = new Logger('Threadmill');
  private readonly calls = new WeakMap<readonly Acknowledgement[], BatchCall>();
  private warnedAt = 0;

  /** @param partitionOf the partition that granted a lease */
  constructor(
    private readonly set: PartitionSet,
    private readonly partitionOf: (lease: LeaseRef) => number,
  ) {}

  async acknowledge(acks: readonly Acknowledgement[], started: readonly LeaseRef[]): Promise<(boolean | undefined)[]> {
    if (acks.length === 0 && started.length === 0) return [];
    let call = this.calls.get(acks);
    if (call === undefined) this.calls.set(acks, (call = this.split(acks, started)));
    let failure: { partitions: number[]; error: unknown } | undefined;
    await Promise.all(
      [...call.acks].map(async ([p, group]) => {
        if (call.answered.has(p)) return;
        try {
          const replies = await this.set.watched(p, (part) => part.acknowledge(group.items, call.starts.get(p)));
          group.places.forEach((place, i) => (call.applied[place] = replies[i]!));
          call.answered.add(p);
        } catch (error) {
          (failure ??= { partitions: [], error }).partitions.push(p);
        }
      }),
    );
    if (failure) this.warn(failure.partitions, failure.error);
    return call.applied;
  }

  private split(acks: readonly Acknowledgement[], started: readonly LeaseRef[]): BatchCall {
    const groups = groupByPartition(acks, this.partitionOf);
    const starts = new Map([...groupByPartition(started, this.partitionOf)].map(([p, group]) => [p, group.items]));
    // A partition with start marks only gets a call of its own too.
    for (const p of starts.keys()) if (!groups.has(p)) groups.set(p, { items: [], places: [] });
    return { acks: groups, starts, applied: acks.map(() => undefined), answered: new Set() };
  }

  private warn(partitions: number[], error: unknown): void {
    if (Date.now() - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = Date.now();
    this.logger.warn(
      `Acknowledgements got no answer from partition(s) ${partitions.sort((a, b) => a - b).join(', ')} ` +
        `(${(error as Error).message}): they are sent again; the other partitions' were applied.`,
    );
  }
}
