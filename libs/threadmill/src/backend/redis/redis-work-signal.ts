import type { RedisClient } from './redis-connections.js';
import type { WorkSignal } from '../task-backend.js';

/**
 * Waits on wake markers with BZPOPMIN on a dedicated connection: an idle
 * worker sends Redis one blocked command instead of polling, and wakes within
 * a round trip of the script that added the marker.
 */
export class RedisWorkSignal implements WorkSignal {
  private closed = false;

  constructor(
    private readonly connection: RedisClient,
    private readonly wakeKeys: readonly string[],
  ) {}

  async wait(timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    try {
      const reply = await this.connection.bzpopmin(...(this.wakeKeys as string[]), Math.max(timeoutMs, 1) / 1000);
      return reply !== null;
    } catch (error) {
      if (this.closed) return false;
      throw error;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connection.disconnect();
  }
}
