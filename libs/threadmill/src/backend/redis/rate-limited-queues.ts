import type { LeasedRun } from '../task-backend.js';
import type { RedisClock } from './redis-clock.js';

/**
 * The rate-limited queues of a worker's claims, as the claims last reported
 * them (`lua/claim.lua`'s `limited`, which also names queues holding parked
 * runs of limit groups, with a slack of -1): each run of a rate-limited queue
 * is told how soon it must start, and an idle consumer whose queues are all
 * held back by their limits
 * waits no longer than until the earliest of them frees a place, instead of
 * its whole idle wait (the claim removed their wake markers, so nothing else
 * would wake it then, and it does not spin meanwhile).
 */
export class RateLimitedQueues {
  /** Queue → when a place of its window frees (Redis clock), for queues held back. */
  private readonly freeAt = new Map<string, number>();

  constructor(private readonly clock: RedisClock) {}

  /**
   * Records a claim's report (`limited`: flat triples of 1-based queue index,
   * start slack, free time), marks the claim's runs of those queues, and
   * gives every run with a start slack the monotonic time it must start by
   * (`LeasedRun.startBy`), from the clock the claim's reply just narrowed.
   */
  saw(
    queues: readonly string[],
    limited: readonly number[] | undefined,
    now: number,
    runs: readonly LeasedRun[],
  ): void {
    if (this.freeAt.size > 0) for (const queue of queues) this.freeAt.delete(queue);
    if (limited !== undefined && limited.length > 0) this.mark(queues, limited, runs);
    for (const run of runs) {
      if (run.startWithinMs !== undefined) run.startBy = this.clock.startBy(now, run.startWithinMs);
    }
  }

  private mark(queues: readonly string[], limited: readonly number[], runs: readonly LeasedRun[]): void {
    const slack = new Map<string, number>();
    for (let i = 0; i < limited.length; i += 3) {
      const queue = queues[limited[i]! - 1]!;
      if (limited[i + 1]! >= 0) slack.set(queue, limited[i + 1]!);
      if (limited[i + 2]! > 0) this.freeAt.set(queue, limited[i + 2]!);
    }
    for (const run of runs) {
      const within = slack.get(run.queue);
      // A run of a rate-limited group of a rate-limited queue keeps the shorter slack.
      if (within !== undefined) run.startWithinMs = Math.min(within, run.startWithinMs ?? within);
    }
  }

  /** How long an idle consumer of `queues` may wait: `timeoutMs`, or less when one of them frees a place sooner. */
  waitFor(queues: readonly string[], timeoutMs: number): number {
    if (this.freeAt.size === 0) return timeoutMs;
    let wait = timeoutMs;
    const now = this.clock.now();
    for (const queue of queues) {
      const at = this.freeAt.get(queue);
      if (at !== undefined) wait = Math.min(wait, Math.max(1, at - now + 1));
    }
    return wait;
  }
}
