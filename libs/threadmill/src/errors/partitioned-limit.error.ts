import { ThreadmillError } from './threadmill.error.js';

/**
 * A queue's concurrency cap or rate limit cannot be split over a partitioned
 * backend's partitions: each partition enforces a share of it, and a limit
 * below the partition count would leave some partition no share at all.
 */
export class PartitionedLimitError extends ThreadmillError {
  constructor(
    readonly queue: string,
    readonly limit: string,
    readonly value: number,
    readonly partitions: number,
  ) {
    super(
      `The ${limit} of queue "${queue}" (${value}) is below the backend's ${partitions} partitions: each partition ` +
        `enforces its own share of it (the "Scale-out" page of the Threadmill docs), so it must be at least ${partitions}. Raise it, or give ` +
        'the queue a backend of its own with fewer partitions.',
    );
  }
}
