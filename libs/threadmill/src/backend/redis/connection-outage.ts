import type { Logger } from '@nestjs/common';
import type { RedisClient } from './redis-client.js';

/** An error seen this long before a connection was lost is taken as its cause; an older one is another story. */
const CAUSE_WINDOW_MS = 1_000;
/** During a boot that cannot connect yet, the same error is logged at most this often. */
const REPEAT_ERROR_MS = 10_000;

/**
 * What the log says about the connections of one backend: one warning when
 * the first of them is lost, one line when every connection lost is ready
 * again, with how long that took. ioredis retries on its own (about
 * every second) and reports each failed retry as an `error` event; during an
 * outage those are kept, not logged, and the last one closes the
 * reconnection's line. Before any connection was ready (a boot waiting for
 * Redis) errors are logged, the same one at most every 10 s.
 *
 * A connection counts as lost on ioredis's `reconnecting` event once the
 * backend was connected: a connection closed on purpose (`disconnect`,
 * `quit`) ends without reconnecting, and before any connection was ready the
 * process is a boot still waiting for Redis.
 */
export class ConnectionOutage {
  /** Connections followed and not ended. */
  private readonly watched = new Set<RedisClient>();
  /** Connections lost and not ready again. */
  private readonly down = new Set<RedisClient>();
  /** When the outage began (`Date.now()`), 0 while there is none. */
  private since = 0;
  private lastError = { message: '', at: 0 };
  private lastLoggedError = { message: '', at: 0 };
  private closed = false;
  /** Some connection was ready once: from then on, a connection that cannot connect is an outage, not a boot. */
  private everReady = false;

  constructor(
    /** Where the connections point, for the lines. */
    private readonly describe: () => string,
    private readonly logger: Logger,
  ) {}

  /** Follows `connection` (the command connection, or one opened for blocking commands or confirmed stores). */
  watch(connection: RedisClient): void {
    this.watched.add(connection);
    if (connection.status === 'ready') this.everReady = true;
    connection.on('ready', () => {
      this.everReady = true;
      if (this.down.delete(connection)) this.settle();
    });
    connection.on('reconnecting', () => {
      if (this.everReady && !this.down.has(connection)) this.lost(connection);
    });
    connection.on('end', () => {
      this.watched.delete(connection);
      if (this.down.delete(connection)) this.settle();
    });
    connection.on('error', (error: Error) => this.failed(error));
  }

  /** The backend closes its connections: what they do from now on is no outage. */
  close(): void {
    this.closed = true;
  }

  private lost(connection: RedisClient): void {
    this.down.add(connection);
    if (this.since !== 0 || this.closed) return;
    this.since = Date.now();
    const { message, at } = this.lastError;
    const cause = message && this.since - at <= CAUSE_WINDOW_MS ? ` (${message})` : '';
    this.logger.warn(
      `Lost the connection to Redis at ${this.describe()}${cause}; reconnecting. Until it is back, commands fail ` +
        'with RedisUnavailableError once connectTimeoutMs has passed; workers and waiters resume by themselves.',
    );
  }

  /**
   * A lost connection is ready again, or ended: the outage is over once no
   * connection is down and some connection is ready (a backend that closed
   * meanwhile reconnected nothing).
   */
  private settle(): void {
    if (this.since === 0 || this.down.size > 0) return;
    const since = this.since;
    this.since = 0;
    if (this.closed || ![...this.watched].some((connection) => connection.status === 'ready')) return;
    const seconds = ((Date.now() - since) / 1000).toFixed(1);
    const { message, at } = this.lastError;
    const last = message && at >= since ? `; last error: ${message}` : '';
    this.logger.log(
      `Reconnected to Redis at ${this.describe()} after ${seconds} s (lost at ${new Date(since).toISOString()}${last})`,
    );
  }

  /**
   * An error of a connection: kept for the outage's lines, and logged by
   * itself only before any connection was ready (a boot waiting for Redis).
   * After that, a connection's error comes right before its loss, whose line
   * names it (a connection opened during an outage, to replace a blocking
   * one, fails before it is counted).
   */
  private failed(error: Error): void {
    const now = Date.now();
    this.lastError = { message: error.message, at: now };
    if (this.everReady || this.closed) return;
    const { message, at } = this.lastLoggedError;
    if (error.message === message && now - at < REPEAT_ERROR_MS) return;
    this.lastLoggedError = { message: error.message, at: now };
    this.logger.warn(`Redis connection error (reconnecting): ${error.message}`);
  }
}
