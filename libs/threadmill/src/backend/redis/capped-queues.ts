/**
 * How long a queue a claim found capped is still treated as capped without
 * another claim saying so: a cap removed meanwhile costs at most this long of
 * wake calls that find nothing to do.
 */
const CAPPED_FOR_MS = 60_000;

/**
 * The queues of a worker's claims that have a concurrency cap, as the claims
 * last reported them (`lua/claim.lua`'s `capped`). A claim of a queue at its
 * cap removes the queue's wake marker, so that idle consumers stay blocked
 * rather than waking to lease nothing; the worker that ends a lease of such a
 * queue sets it again (`lua/wake.lua`). Queues without a cap are never here,
 * so their acknowledgements make no extra call.
 */
export class CappedQueues {
  /** Queue → until when (Redis clock, epoch ms) it counts as capped. */
  private readonly until = new Map<string, number>();
  /** The latest Redis time a claim reported. */
  private now = 0;

  /** Records a claim's report: `capped` are 1-based indexes into `queues`. */
  saw(queues: readonly string[], capped: readonly number[] | undefined, now: number): void {
    this.now = now;
    if (this.until.size === 0 && (capped === undefined || capped.length === 0)) return;
    const reported = new Set((capped ?? []).map((q) => queues[q - 1]!));
    for (const queue of queues) {
      if (reported.has(queue)) this.until.set(queue, now + CAPPED_FOR_MS);
      else this.until.delete(queue);
    }
  }

  /** The distinct capped queues among `runs`. */
  among(runs: readonly { readonly queue: string }[]): string[] {
    if (this.until.size === 0) return [];
    const found = new Set<string>();
    for (const { queue } of runs) {
      const until = this.until.get(queue);
      if (until !== undefined && until >= this.now) found.add(queue);
    }
    return [...found];
  }
}
