import type { WorkSignal } from '../task-backend.js';
import type { RedisClient } from './redis-client.js';

/**
 * How long past its own timeout a blocked wait may go unanswered before the
 * waiter gives up on it: a wait queued on a connection that is reconnecting
 * (or black-holed) may never be answered at all.
 */
const UNANSWERED_GRACE_MS = 5_000;

/**
 * Waits on wake markers with BZPOPMIN on a dedicated connection: an idle
 * broker sends Redis one blocked command instead of polling, and wakes within
 * a round trip of the script that added the marker.
 */
export class RedisWorkSignal implements WorkSignal {
  private closed = false;
  /**
   * Ends the wait under way. One per wait, never one promise for the
   * signal's life: a race against a promise that stays pending leaves a
   * reaction on it per call, which a broker waiting several times a second
   * piles up for as long as it runs.
   */
  private endWait: ((value: false) => void) | undefined;

  /** @param wakeKeys ZSETs to block on */
  constructor(
    private readonly connection: RedisClient,
    private readonly wakeKeys: readonly string[],
  ) {}

  async wait(timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    const seconds = Math.max(timeoutMs, 1) / 1000;
    const popped = this.connection.bzpopmin(...(this.wakeKeys as string[]), seconds).then((reply) => reply !== null);
    // The race below may settle without it: a late failure must not go unhandled.
    popped.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs + UNANSWERED_GRACE_MS);
    });
    const closing = new Promise<false>((resolve) => (this.endWait = resolve));
    try {
      // Closing, or a wait that is never answered, must not leave the waiter hanging.
      return await Promise.race([popped, closing, unanswered]);
    } catch (error) {
      if (this.closed) return false;
      throw error;
    } finally {
      clearTimeout(timer);
      this.endWait = undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.endWait?.(false);
    this.connection.disconnect();
  }
}
