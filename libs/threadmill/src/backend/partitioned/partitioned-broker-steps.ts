import { Logger } from '@nestjs/common';
import type { LeasedRun } from '../task-backend.js';
import type { RedisTaskBackend } from '../redis/redis.backend.js';
import type { PartitionSet } from './partition-set.js';

/** How soon a broker step is run again after it failed in some partitions. */
const PARTIAL_RETRY_MS = 500;
/** Least time between two warnings of a broker step that failed in some partitions. */
const PARTIAL_WARN_EVERY_MS = 10_000;

/**
 * The broker's steps (promotion, reaping, trimming) over every partition, in
 * parallel. A partition that fails (its master away) does not hold the
 * others back: their replies are used (a reap's runs must be settled), the
 * failure is logged, and the step asks to be run again within
 * {@link PARTIAL_RETRY_MS}; a step throws only when every partition failed.
 */
export class PartitionedBrokerSteps {
  private readonly logger = new Logger('Threadmill');
  private warnedAt = 0;

  /** @param granted told which partition granted the leases of reaped runs */
  constructor(
    private readonly set: PartitionSet,
    private readonly granted: (partition: number, runs: readonly LeasedRun[]) => void,
  ) {}

  async promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }> {
    const { replies, retryAt } = await this.step('promotion', (part) => part.promote(queues));
    return {
      now: replies[0]!.now,
      promoted: replies.reduce((total, reply) => total + reply.promoted, 0),
      nextDueAt: earliest([...replies.map((reply) => reply.nextDueAt), retryAt(replies[0]!.now)]),
    };
  }

  async reap(
    queues: readonly string[],
    claimTtlMs: number,
    maxRecoveries: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }> {
    const { replies, partitions, retryAt } = await this.step('reaping', (part) =>
      part.reap(queues, claimTtlMs, maxRecoveries),
    );
    replies.forEach((reply, i) => this.granted(partitions[i]!, reply.runs));
    return {
      runs: replies.flatMap((reply) => reply.runs),
      returned: replies.reduce((total, reply) => total + reply.returned, 0),
      nextDeadline: earliest([...replies.map((reply) => reply.nextDeadline), retryAt(this.set.part(0).redisNow())]),
    };
  }

  async trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }> {
    const { replies, retryAt } = await this.step('trimming', (part) => part.trim(queues));
    return {
      removed: replies.reduce((total, reply) => total + reply.removed, 0),
      nextExpiryAt: earliest([...replies.map((reply) => reply.nextExpiryAt), retryAt(this.set.part(0).redisNow())]),
    };
  }

  private async step<R>(
    name: string,
    call: (part: RedisTaskBackend) => Promise<R>,
  ): Promise<{ replies: R[]; partitions: number[]; retryAt: (now: number) => number | null }> {
    const settled = await Promise.allSettled(this.set.partitions().map((p) => this.set.watched(p, call)));
    const replies: R[] = [];
    const partitions: number[] = [];
    const failed: number[] = [];
    let firstError: unknown;
    settled.forEach((outcome, p) => {
      if (outcome.status === 'fulfilled') {
        replies.push(outcome.value);
        partitions.push(p);
      } else {
        failed.push(p);
        firstError ??= outcome.reason;
      }
    });
    if (replies.length === 0) throw firstError;
    if (failed.length > 0 && Date.now() - this.warnedAt > PARTIAL_WARN_EVERY_MS) {
      this.warnedAt = Date.now();
      this.logger.warn(
        `Broker ${name} failed in partition(s) ${failed.join(', ')} (${(firstError as Error).message}); the other ` +
          'partitions go on, and the failed ones are tried again within half a second.',
      );
    }
    return { replies, partitions, retryAt: (now) => (failed.length > 0 ? now + PARTIAL_RETRY_MS : null) };
  }
}

/** The earliest of some times (epoch ms), or null when none is set. */
export function earliest(times: readonly (number | null)[]): number | null {
  let first: number | null = null;
  for (const time of times) if (time !== null && (first === null || time < first)) first = time;
  return first;
}
