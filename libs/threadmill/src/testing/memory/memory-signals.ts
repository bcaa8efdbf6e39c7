import type { ClaimedRuns, ClaimWaiter, WorkSignal } from '../../backend/task-backend.js';

const noop = (): void => undefined;

/**
 * Wake-ups of blocked waiters, by topic (a queue name, or the broker's):
 * the in-memory counterpart of the Redis backend's wake keys.
 */
export class MemoryWakeups {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Wakes every waiter of `topic`. */
  wake(topic: string): void {
    // Deleting from a Set while iterating it is safe: each waiter removes itself.
    for (const wake of this.waiters.get(topic) ?? []) wake();
  }

  /**
   * Waits up to `timeoutMs` for a wake-up of one of `topics`, or for
   * `interrupt` to be called; resolves true when woken.
   */
  wait(topics: readonly string[], timeoutMs: number): { done: Promise<boolean>; interrupt: () => void } {
    let interrupt: () => void = noop;
    const done = new Promise<boolean>((resolve) => {
      const finish = (woken: boolean): void => {
        clearTimeout(timer);
        for (const topic of topics) this.waiters.get(topic)?.delete(wake);
        resolve(woken);
      };
      const wake = (): void => finish(true);
      const timer = setTimeout(() => finish(false), timeoutMs);
      for (const topic of topics) {
        let set = this.waiters.get(topic);
        if (!set) this.waiters.set(topic, (set = new Set()));
        set.add(wake);
      }
      interrupt = () => finish(false);
    });
    return { done, interrupt };
  }
}

/** The broker's signal: woken by new deferred runs. */
export function memoryWorkSignal(wakeups: MemoryWakeups, topic: string): WorkSignal {
  let current: (() => void) | undefined;
  let closed = false;
  return {
    async wait(timeoutMs) {
      if (closed) return false;
      const { done, interrupt } = wakeups.wait([topic], timeoutMs);
      current = interrupt;
      return (await done) && !closed;
    },
    async close() {
      closed = true;
      current?.();
    },
  };
}

/** An idle consumer's claim: waits for a store to one of its queues, then claims. */
export function memoryClaimWaiter(
  wakeups: MemoryWakeups,
  queues: readonly string[],
  claim: (count: number, offset: number) => Promise<ClaimedRuns>,
  limitWait: (timeoutMs: number) => number = (timeoutMs) => timeoutMs,
): ClaimWaiter {
  let current: (() => void) | undefined;
  let closed = false;
  return {
    async claim(count, offset, timeoutMs) {
      // Runs already ready need no wait, as a blocked pop returns at once.
      const ready = await claim(count, offset);
      if (ready.length > 0 || closed) return ready;
      // A queue held back by its rate limit frees a place by itself: wait no longer.
      const { done, interrupt } = wakeups.wait(queues, limitWait(timeoutMs));
      current = interrupt;
      await done;
      current = undefined;
      return claim(count, offset);
    },
    async interrupt() {
      current?.();
    },
    async close() {
      closed = true;
      current?.();
    },
  };
}
