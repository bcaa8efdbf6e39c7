import type { LeasedRun, WorkSignal } from '../task-backend.js';
import type { RedisClient } from './redis-connections.js';

/**
 * How long past its own timeout a blocked wait may go unanswered before the
 * waiter gives up on it: a wait queued on a connection that is reconnecting
 * (or black-holed) may never be answered at all.
 */
const UNANSWERED_GRACE_MS = 5_000;

/**
 * Waits on wake markers with BZPOPMIN on a dedicated connection: an idle
 * worker sends Redis one blocked command instead of polling, and wakes within
 * a round trip of the script that added the marker. A consumer's inbox, first
 * among the keys, hands it a leased run in the same reply.
 */
export class RedisWorkSignal implements WorkSignal {
  private closed = false;
  private readonly closing: Promise<false>;
  private resolveClosing!: (value: false) => void;

  /**
   * @param wakeKeys ZSETs to block on, in order of precedence
   * @param read what a popped member means (default: a wake-up marker)
   */
  constructor(
    private readonly connection: RedisClient,
    private readonly wakeKeys: readonly string[],
    private readonly read: (key: string, member: string) => true | LeasedRun = () => true,
  ) {
    this.closing = new Promise((resolve) => (this.resolveClosing = resolve));
  }

  async wait(timeoutMs: number): Promise<boolean | LeasedRun> {
    if (this.closed) return false;
    const seconds = Math.max(timeoutMs, 1) / 1000;
    const popped = this.connection
      .bzpopmin(...(this.wakeKeys as string[]), seconds)
      .then((reply) => (reply === null ? false : this.read(reply[0], reply[1])));
    // The race below may settle without it: a late failure must not go unhandled.
    popped.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs + UNANSWERED_GRACE_MS);
    });
    try {
      // Closing, or a wait that is never answered, must not leave the waiter hanging.
      return await Promise.race([popped, this.closing, unanswered]);
    } catch (error) {
      if (this.closed) return false;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.resolveClosing(false);
    this.connection.disconnect();
  }
}
