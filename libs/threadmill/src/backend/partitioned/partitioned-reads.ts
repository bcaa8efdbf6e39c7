import type { MinuteMetrics, QueueCounts, Segment } from '../task-backend.js';
import { interleavePages, mergeLeases, sumCounts, sumMetrics, sumStats } from './partition-merge.js';
import { earliest } from './partitioned-broker-steps.js';
import type { PartitionSet } from './partition-set.js';

/**
 * What observers read of a partitioned backend's queues (the inspector, the
 * dashboard, metrics, health): every partition read in parallel, and the
 * replies summed or merged into one queue's (see `partition-merge.ts`).
 */
export class PartitionedReads {
  constructor(private readonly set: PartitionSet) {}

  async counts(queues: readonly string[]): Promise<QueueCounts[]> {
    if (queues.length === 0) return [];
    return sumCounts(await this.set.every((part) => part.counts(queues)));
  }

  async list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    const pages = await this.set.every((part) => part.list(queue, segment, 0, offset + limit));
    return interleavePages(pages, offset, limit);
  }

  async stats(queue: string): Promise<Record<string, number>> {
    return sumStats(await this.set.every((part) => part.stats(queue)));
  }

  async metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    return sumMetrics(await this.set.every((part) => part.metrics(queue, minutes)));
  }

  async readySince(queue: string): Promise<{ now: number; since: number | null }> {
    const replies = await this.set.every((part) => part.readySince(queue));
    return { now: replies[0]!.now, since: earliest(replies.map((reply) => reply.since)) };
  }

  async leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    return mergeLeases(await this.set.every((part) => part.leases(queue)));
  }
}
