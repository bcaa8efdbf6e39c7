import { claimedRuns } from '../claim-rotation.js';
import type { ClaimedRuns, ClaimWaiter } from '../task-backend.js';
import type { RedisClient } from './redis-client.js';
import type { RedisConnections } from './redis-connections.js';
import { defineScripts, runScript } from './scripts/redis-scripts.js';

/**
 * How long past its own timeout a blocked wait may go unanswered before the
 * waiter gives up on its connection: a wait queued on a connection that is
 * reconnecting (or black-holed) may never be answered at all.
 */
const UNANSWERED_GRACE_MS = 5_000;
/** How long a stop marker outlives a wait that never came to pop it. */
const STOP_MARKER_TTL_MS = 60_000;

/** A claim call ready to send: its keys, arguments, and how to read its reply. */
export interface ClaimCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /**
   * @param sentAt `performance.now()` when the call went out (for a blocking
   *   claim: its wait's, a loose bound the clock's other replies narrow)
   * @param receivedAt `performance.now()` when its reply arrived
   */
  read(reply: unknown, sentAt: number, receivedAt: number): ClaimedRuns;
}

/**
 * The blocking claim of an idle consumer. It writes a `BZPOPMIN` on the
 * consumer's wake markers and the claim script right behind it on a
 * connection of its own: Redis holds the claim until the wait ends (a marker
 * popped, or the timeout) and runs it at once, so a run enqueued into an
 * empty queue reaches the consumer in the wake-up's reply, one hop after
 * the enqueue, and is leased only to a consumer that is reading its
 * connection: a dead consumer's connection closes with its unread claim.
 *
 * The consumer's own stop marker comes first among the keys, so that
 * {@link interrupt} ends the wait at once (its claim still runs; the stopping
 * consumer hands what it got back).
 */
export class RedisClaimWaiter implements ClaimWaiter {
  private connection: RedisClient;
  private closed = false;

  /**
   * @param wakeKeys the queues' wake markers
   * @param stopKey the consumer's stop marker
   * @param prepare builds the claim call for `count` runs from `offset`
   * @param limitWait shortens a wait that would outlast a rate limit's hold on the queues
   */
  constructor(
    private readonly connections: RedisConnections,
    private readonly wakeKeys: readonly string[],
    private readonly stopKey: string,
    private readonly prepare: (count: number, offset: number) => ClaimCall,
    private readonly limitWait: (timeoutMs: number) => number = (timeoutMs) => timeoutMs,
  ) {
    this.connection = this.open();
  }

  async claim(count: number, offset: number, timeoutMs: number): Promise<ClaimedRuns> {
    if (this.closed) return claimedRuns([], offset);
    timeoutMs = this.limitWait(timeoutMs);
    const call = this.prepare(count, offset);
    const { connection } = this;
    const sentAt = performance.now();
    const woken = connection.bzpopmin(this.stopKey, ...(this.wakeKeys as string[]), Math.max(timeoutMs, 1) / 1000);
    // Written right behind the wait on the same connection: Redis runs it when the wait ends.
    const claimed = runScript(connection, 'claim', call.keys, call.args);
    // The claim's reply is what counts; a failed wait fails the claim as well.
    woken.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs + UNANSWERED_GRACE_MS);
    });
    try {
      const reply = await Promise.race([claimed, unanswered]);
      if (reply !== null) return call.read(reply, sentAt, performance.now());
      // Never answered: a new connection for the next wait. If Redis ran the
      // claim after all, its runs never started and come back when their
      // leases expire.
      claimed.catch(() => undefined);
      this.reconnect();
      return claimedRuns([], offset);
    } catch (error) {
      if (this.closed) return claimedRuns([], offset);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  async interrupt(): Promise<void> {
    await this.connections.client
      .multi()
      .zadd(this.stopKey, 0, 'stop')
      .pexpire(this.stopKey, STOP_MARKER_TTL_MS)
      .exec();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connection.disconnect();
  }

  private reconnect(): void {
    this.connection.disconnect();
    if (!this.closed) this.connection = this.open();
  }

  private open(): RedisClient {
    const connection = this.connections.openBlocking('wake');
    defineScripts(connection);
    return connection;
  }
}
