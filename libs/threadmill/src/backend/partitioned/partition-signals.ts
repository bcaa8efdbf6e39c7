import type { WorkSignal } from '../task-backend.js';

/**
 * Blocked waits on the wake markers of every partition at once: a blocked
 * command holds its connection, and keys of several slots cannot share one
 * command, so each partition has a signal (one `BZPOPMIN` connection) of
 * its own. A wait ends when any of them wakes; the others stay blocked and
 * serve the next wait, so an idle process costs each partition one blocked
 * command, not one per wait.
 *
 * A partition whose marker pops while nobody waits (the process went back
 * to work meanwhile) is handed to `aside`: the marker is gone from Redis,
 * so whoever owns the signals must act on it, or keep the wake-up for its
 * next wait (see its users).
 */
export class PartitionSignals {
  private readonly signals: WorkSignal[] = [];
  private readonly armed: boolean[] = [];
  private readonly woken = new Set<number>();
  private wake: (() => void) | undefined;
  private closed = false;

  /**
   * @param open a partition's signal, opened the first time it is waited on
   * @param span how many partitions there are now (it may grow)
   * @param aside told of a partition woken while no wait was under way;
   *   true keeps the wake-up: the next wait returns it at once
   */
  constructor(
    private readonly open: (partition: number) => WorkSignal,
    private readonly span: () => number,
    private readonly aside: (partition: number) => boolean,
  ) {}

  /**
   * Waits up to `timeoutMs` for a wake-up; returns the partitions that woke
   * (none: timed out, interrupted or closed).
   */
  async wait(timeoutMs: number): Promise<Set<number>> {
    if (this.closed) return new Set();
    const span = this.span();
    // Partitions dropped from the span (drained after the count shrank) are no longer waited on.
    for (let p = span; p < this.signals.length; p++) this.drop(p);
    if (this.woken.size === 0) {
      for (let p = 0; p < span; p++) if (!this.armed[p]) this.arm(p, timeoutMs);
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(resolve, timeoutMs);
      });
      clearTimeout(timer);
      this.wake = undefined;
    }
    const woken = new Set(this.woken);
    this.woken.clear();
    return woken;
  }

  /** Ends a wait under way now (it returns no partition). */
  interrupt(): void {
    this.wake?.();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.interrupt();
    await Promise.all(this.signals.map((signal) => signal?.close()));
  }

  /** Closes partition `p`'s signal (its blocked connection); it is opened again if the span grows back. */
  private drop(p: number): void {
    const signal = this.signals[p];
    if (signal === undefined) return;
    delete this.signals[p];
    this.armed[p] = false;
    this.woken.delete(p);
    void signal.close();
  }

  private arm(p: number, timeoutMs: number): void {
    const signal = (this.signals[p] ??= this.open(p));
    this.armed[p] = true;
    signal.wait(timeoutMs).then(
      (woken) => {
        // A signal dropped meanwhile (its partition left the span) tells nothing.
        if (this.signals[p] !== signal) return;
        this.armed[p] = false;
        if (!woken || this.closed) return;
        if (this.wake) {
          this.woken.add(p);
          this.wake();
        } else if (this.aside(p)) this.woken.add(p);
      },
      // A broken connection only ends this partition's wait: the next wait arms it
      // again, and the wait under way still ends on its own timer.
      () => {
        if (this.signals[p] === signal) this.armed[p] = false;
      },
    );
  }
}

/**
 * Which partitions a consumer may find ready runs in. A claim that came back
 * short marks its partition empty: later claims skip it without a round trip
 * until its wake marker fires, or `recheckMs` passes (a busy consumer does
 * not wait on markers; the recheck keeps it from starving a partition whose
 * runs arrived meanwhile while others kept it busy).
 */
export class PartitionHints {
  /** Partition → when a claim found it empty (local clock). */
  private readonly emptiedAt = new Map<number, number>();

  constructor(private readonly recheckMs: number) {}

  mayHold(p: number): boolean {
    const at = this.emptiedAt.get(p);
    return at === undefined || performance.now() - at >= this.recheckMs;
  }

  emptied(p: number): void {
    this.emptiedAt.set(p, performance.now());
  }

  ready(p: number): void {
    this.emptiedAt.delete(p);
  }

  /** Every partition may hold runs again (an idle wait timed out: look everywhere). */
  reset(): void {
    this.emptiedAt.clear();
  }
}
