import { Logger } from '@nestjs/common';
import type { LeaseRenewal, RenewedLease, WorkerHeartbeat } from '../task-backend.js';
import { groupByPartition } from './partition-groups.js';
import type { PartitionSet } from './partition-set.js';

/** Least time between two warnings of renewals that some partitions did not answer. */
const WARN_EVERY_MS = 10_000;
/** What a partition's renewal call is raced against: the caller stops waiting. */
const LATE = Symbol('late');

/**
 * A worker process's renewal over a partitioned backend: one call per
 * partition it holds leases in (and home, which keeps its heartbeat), in
 * parallel. Each partition answers for its own leases: one whose master is
 * away (its call failed, or has not answered when the caller's next renewal
 * is due) answers `unanswered` for its leases, which keep their holder's last
 * known deadline, while the leases of every other partition are renewed and
 * trusted. Throws only when every call failed, as one call of a backend of
 * one partition does.
 */
export class PartitionedRenewal {
  private readonly logger = new Logger('Threadmill');
  private warnedAt = 0;

  /** @param partitionOf the partition that granted a lease */
  constructor(
    private readonly set: PartitionSet,
    private readonly partitionOf: (lease: LeaseRenewal) => number,
  ) {}

  async renew(
    worker: WorkerHeartbeat,
    recordTtlMs: number,
    leases: readonly LeaseRenewal[],
    answerWithinMs?: number,
  ): Promise<RenewedLease[]> {
    const groups = groupByPartition(leases, this.partitionOf);
    if (!groups.has(0)) groups.set(0, { items: [], places: [] });
    const answers = leases.map((): RenewedLease => 'unanswered');
    let timer: NodeJS.Timeout | undefined;
    const late =
      answerWithinMs === undefined
        ? undefined
        : new Promise<typeof LATE>((resolve) => (timer = setTimeout(resolve, answerWithinMs, LATE)));
    const unanswered: number[] = [];
    let failures = 0;
    let firstError: unknown;
    await Promise.all(
      [...groups].map(async ([p, group]) => {
        const call = this.set.watched(p, (part) => part.renew(worker, recordTtlMs, group.items));
        // The race below may settle without it: a late failure must not go unhandled.
        call.catch(() => undefined);
        try {
          const replies = late ? await Promise.race([call, late]) : await call;
          if (replies === LATE) unanswered.push(p);
          else group.places.forEach((place, i) => (answers[place] = replies[i]!));
        } catch (error) {
          unanswered.push(p);
          failures++;
          firstError ??= error;
        }
      }),
    );
    clearTimeout(timer);
    if (failures === groups.size) throw firstError;
    if (unanswered.length > 0)
      this.warn(
        unanswered.sort((a, b) => a - b),
        groups.size,
        firstError,
      );
    return answers;
  }

  private warn(partitions: readonly number[], of: number, error: unknown): void {
    if (Date.now() - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = Date.now();
    const why = error instanceof Error ? error.message : 'no answer in time';
    this.logger.warn(
      `Lease renewal got no answer from partition(s) ${partitions.join(', ')} of ${of} (${why}): their leases keep ` +
        'their last known deadline and are renewed again at the next renewal; the other partitions renewed theirs.',
    );
  }
}
