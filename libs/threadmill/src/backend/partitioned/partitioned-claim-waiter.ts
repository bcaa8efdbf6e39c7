import { claimedRuns } from '../claim-rotation.js';
import type { ClaimedRuns, ClaimWaiter } from '../task-backend.js';
import type { PartitionHints, PartitionSignals } from './partition-signals.js';

/** What the waiter needs of its backend. */
export interface ClaimSource {
  /** The partitioned claim (it skips the partitions `hints` call empty). */
  claim(count: number, offset: number): Promise<ClaimedRuns>;
  /** How long an idle wait may last: shorter when a rate limit frees a place sooner. */
  waitFor(timeoutMs: number): number;
  /** The waiter closed. */
  closed(): void;
}

/**
 * The blocking claim of an idle consumer of a partitioned backend. It waits
 * on every partition's wake markers at once (see {@link PartitionSignals})
 * and, when one fires, claims from the partitions that woke; when the wait
 * times out, it claims looking at every partition, as a lost marker would
 * otherwise go unnoticed. Unlike the single-partition waiter it does not
 * send its claim behind the wait on the blocked connection: the wake-up's
 * reply and the claim are two round trips, and a consumer never holds runs
 * of a partition it did not ask.
 */
export class PartitionedClaimWaiter implements ClaimWaiter {
  private closing = false;
  private interrupted = false;

  constructor(
    private readonly signals: PartitionSignals,
    private readonly hints: PartitionHints,
    private readonly source: ClaimSource,
  ) {}

  async claim(count: number, offset: number, timeoutMs: number): Promise<ClaimedRuns> {
    if (this.closing) return claimedRuns([], offset);
    const woken = await this.signals.wait(this.source.waitFor(timeoutMs));
    if (this.interrupted || this.closing) {
      this.interrupted = false;
      return claimedRuns([], offset);
    }
    if (woken.size === 0) this.hints.reset();
    else for (const p of woken) this.hints.ready(p);
    return this.source.claim(count, offset);
  }

  async interrupt(): Promise<void> {
    this.interrupted = true;
    this.signals.interrupt();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.source.closed();
    await this.signals.close();
  }
}
