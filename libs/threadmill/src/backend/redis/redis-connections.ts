import { Logger } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisConnection } from '../../module/threadmill-options.interface.js';

/**
 * The Redis connections of one backend: a shared command connection and a
 * dedicated connection per blocking waiter (a blocked command holds its
 * connection). Connections Threadmill created are closed by {@link close};
 * an ioredis instance passed in by the application stays the application's.
 */
export class RedisConnections {
  readonly client: Redis;
  private readonly owned: boolean;
  private readonly blocking = new Set<Redis>();
  private readonly logger = new Logger('Threadmill');
  private lastError = { message: '', at: 0 };

  constructor(connection: RedisConnection, alias: string) {
    const defaults: RedisOptions = {
      connectionName: `threadmill:${alias}`,
      // Commands issued in the same tick share one round trip: concurrent
      // single enqueues cost one write instead of one each.
      enableAutoPipelining: true,
    };
    if (connection instanceof Redis) {
      this.client = connection;
      this.owned = false;
    } else if (typeof connection === 'string') {
      this.client = new Redis(connection, defaults);
      this.owned = true;
    } else {
      this.client = new Redis({ ...defaults, ...connection });
      this.owned = true;
    }
    this.watch(this.client);
  }

  /**
   * Logs connection errors (ioredis reconnects by itself) instead of letting
   * ioredis print every failed attempt; the same error is logged at most
   * every 10 s.
   */
  private watch(connection: Redis): void {
    connection.on('error', (error: Error) => {
      const now = Date.now();
      if (error.message === this.lastError.message && now - this.lastError.at < 10_000) return;
      this.lastError = { message: error.message, at: now };
      this.logger.warn(`Redis connection error (reconnecting): ${error.message}`);
    });
  }

  /** A new connection for a blocking command; it retries forever while Redis is away. */
  openBlocking(role: string): Redis {
    const connection = this.client.duplicate({
      connectionName: `${this.client.options.connectionName ?? 'threadmill'}:${role}`,
      enableAutoPipelining: false,
      maxRetriesPerRequest: null,
    });
    this.watch(connection);
    this.blocking.add(connection);
    connection.once('end', () => this.blocking.delete(connection));
    return connection;
  }

  /** Closes every blocking connection, and the command connection if Threadmill opened it. */
  async close(): Promise<void> {
    for (const connection of this.blocking) connection.disconnect();
    this.blocking.clear();
    if (!this.owned || this.client.status === 'end') return;
    if (this.client.status !== 'ready') {
      // QUIT would wait in the offline queue for a server that is not there.
      this.client.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.client.quit().catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, 2_000))),
    ]);
    clearTimeout(timer);
    this.client.disconnect();
  }
}
