import { Logger } from '@nestjs/common';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisOutOfMemoryError, isOutOfMemory } from '../../errors/redis-out-of-memory.error.js';
import { RedisUnavailableError } from '../../errors/redis-unavailable.error.js';
import type { RedisConnection } from '../../options/threadmill-options.interface.js';
import type { RedisClient } from './redis-client.js';
import { ConnectionOutage } from './connection-outage.js';
import { scriptCommand } from './scripts/redis-scripts.js';

/** Whether `error` means the connection failed (closed, reset, timed out), rather than Redis refusing the command. */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error) || error.name === 'ReplyError') return false;
  return CONNECTION_FAILURE.test(`${error.name} ${error.message}`);
}

/**
 * What ioredis says when a command could not reach Redis, or its answer could
 * not reach the client: a socket's failures, and a Redis Cluster client's when
 * no master of the slot answered (its redirections and retries ran out while
 * a master was away, or it could not read the cluster's slots at all).
 */
const CONNECTION_FAILURE =
  /Connection is closed|Stream isn't writeable|Command timed out|ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|MaxRetriesPerRequest|Too many Cluster redirections|ClusterAllFailedError|Failed to refresh slots cache/;

/**
 * Reconnect fast: a worker should resume within about a second of Redis
 * coming back (ioredis's default backs off to 5 s).
 */
/** The beat a read waits before it is sent again after its connection dropped (see `guardRead`). */
const READ_RETRY_MS = 50;

const retryStrategy = (times: number): number =>
  Math.min(50 * 2 ** (times - 1), 1_000) + Math.floor(Math.random() * 100);

/**
 * The Redis connections of one backend: a shared command connection and a
 * dedicated connection per blocking waiter (a blocked command holds its
 * connection), and one for confirmed stores when `confirmEnqueues` is on
 * (a WAIT blocks too). Connections Threadmill created are closed by {@link close};
 * an ioredis instance passed in by the application stays the application's.
 *
 * The command connection never buffers commands while Redis is away: a
 * command waits up to `connectTimeoutMs` for the connection to be ready, then
 * fails with `RedisUnavailableError`. An enqueue issued during an outage is
 * therefore never written later behind the caller's back.
 *
 * A command in flight when the connection drops is another matter: Redis may
 * have run it and only the reply was lost. ioredis resends it on reconnect
 * (`autoResendUnfulfilledCommands`, on by default, here and most likely in an
 * instance the application passes), so the enqueue script recognises a
 * replayed call and stores nothing twice, and the caller gets its runs as
 * created (the claim and acknowledge scripts recognise theirs too).
 */
export class RedisConnections {
  readonly client: RedisClient;
  private readonly owned: boolean;
  private readonly dedicated = new Set<RedisClient>();
  private readonly logger = new Logger('Threadmill');
  private readonly outage = new ConnectionOutage(() => this.describe(), this.logger);
  /** The latest connection error, for `ready`'s message. */
  private lastError = '';
  /**
   * Callers of {@link ready} waiting for the command connection. One `ready`
   * listener serves them all: during an outage every enqueue waits, and a
   * listener each would grow with the callers (Node warns of a leak past ten).
   */
  private readonly readyWaiters = new Set<() => void>();

  constructor(
    connection: RedisConnection,
    alias: string,
    /** How long a command waits for the connection while Redis is away. */
    readonly connectTimeoutMs: number,
  ) {
    const defaults: RedisOptions = {
      connectionName: `threadmill:${alias}`,
      // Commands issued in the same tick share one write (an inspector's or
      // the dashboard's reads, say).
      enableAutoPipelining: true,
      // Except the hot scripts, which batch by themselves (enqueues coalesce
      // in StoreCoalescer, claims and acknowledgements carry batches):
      // auto-pipelining holds a command until the event loop's check phase,
      // and a worker issues its claim-ahead just before it runs a whole batch
      // synchronously, so Redis would only see that claim once the batch is
      // done; an idle run's enqueue would wait a loop turn. And the schedule
      // scripts a broker's pass sends by the hundred: an automatic pipeline
      // holds its commands and replies until the last reply, and enough of
      // them outlived the young generation to fill the old one with garbage
      // (the supervisor's peak memory grew with the schedules to plan); sent
      // at once, they are still in flight together, on one socket.
      autoPipeliningIgnoredCommands: (['claim', 'acknowledge', 'enqueue', 'scheduleDue', 'scheduleFire'] as const).map(
        (name) => scriptCommand(name),
      ),
      // ioredis 6 speaks RESP3 unless told otherwise, and the scripts' replies
      // are read as RESP2; ioredis 5 (whose options lack the field) always
      // speaks RESP2. Either version may be the application's.
      ...({ protocol: 2 } as Partial<RedisOptions>),
      enableOfflineQueue: false,
      // A frozen server or a dead link must not hang a producer forever.
      commandTimeout: connectTimeoutMs,
      retryStrategy,
    };
    if (connection instanceof Redis || connection instanceof Cluster) {
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
    this.client.on('ready', () => {
      for (const wake of this.readyWaiters) wake();
    });
  }

  /** Where the connection points, with any password masked, for messages. */
  describe(): string {
    if (this.client instanceof Cluster) {
      const nodes = this.client.nodes('master').map(({ options }) => `${options.host}:${options.port}`);
      return `Redis Cluster ${nodes.join(',') || '(no node reached)'}`;
    }
    const { host, port, path, db, sentinels, name } = this.client.options;
    // Under Sentinel, `host` and `port` are ioredis's defaults, not the primary: name what the client asks.
    if (sentinels?.length) {
      const via = sentinels.map((sentinel) => `${sentinel.host ?? 'localhost'}:${sentinel.port ?? 26379}`);
      return `Redis Sentinel ${name ?? '(no name)'} via ${via.join(',')}`;
    }
    return path ? `unix:${path}` : `${host ?? 'localhost'}:${port ?? 6379}/${db ?? 0}`;
  }

  /**
   * Resolves once the command connection is ready, waiting at most
   * `connectTimeoutMs` while it (re)connects.
   * @param failFast reject at the first connection error instead: for a
   *   one-shot tool whose user is waiting (an inspector), not for a service,
   *   which rides out a Redis restart
   * @throws RedisUnavailableError when it is not ready in time, or with
   *   `failFast`, when connecting fails
   */
  ready(failFast = false): Promise<void> {
    const { client } = this;
    if (client.status === 'ready') return Promise.resolve();
    if (client.status === 'wait') void client.connect().catch(() => undefined);
    return new Promise((resolve, reject) => {
      const settle = (error?: Error): void => {
        clearTimeout(timer);
        this.readyWaiters.delete(onReady);
        if (failFast) client.off('error', onError);
        if (error) reject(new RedisUnavailableError(this.describe(), error));
        else resolve();
      };
      const timer = setTimeout(
        () =>
          settle(new Error(`not connected within ${this.connectTimeoutMs} ms (${this.lastError || client.status})`)),
        this.connectTimeoutMs,
      );
      const onReady = (): void => settle();
      const onError = (error: Error): void => settle(error);
      this.readyWaiters.add(onReady);
      if (failFast) client.once('error', onError);
    });
  }

  /**
   * Runs `command`, turning a connection failure into `RedisUnavailableError`
   * (Redis errors, such as OOM, pass through unchanged).
   */
  async guard<T>(command: () => Promise<T>, advice?: string): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw this.typed(error, advice);
    }
  }

  /** `error` as the typed error it stands for: a failed connection, Redis out of memory, or itself. */
  private typed(error: unknown, advice?: string): unknown {
    if (isConnectionFailure(error)) return new RedisUnavailableError(this.describe(), error, advice);
    if (isOutOfMemory(error)) return new RedisOutOfMemoryError(this.describe(), error);
    return error;
  }

  /**
   * `guard` for a read, which is safe to send again: one that failed because
   * the connection dropped under it (after `ready`) is sent again once the
   * connection is back, as a read sent during the outage would have waited,
   * for up to `connectTimeoutMs` in all. The client may still call a closing
   * connection ready for a moment: each try waits a beat first.
   */
  async guardRead<T>(read: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.connectTimeoutMs;
    for (;;) {
      try {
        return await read();
      } catch (error) {
        if (!isConnectionFailure(error) || Date.now() >= deadline) throw this.typed(error);
        await sleep(READ_RETRY_MS);
        await this.ready();
      }
    }
  }

  /** A new connection for a blocking command; it waits out outages and resends its command on reconnect. */
  openBlocking(role: string): RedisClient {
    const name = `threadmill:${role}`;
    const connection =
      this.client instanceof Cluster
        ? this.client.duplicate(undefined, {
            enableOfflineQueue: true,
            redisOptions: { ...this.client.options.redisOptions, connectionName: name, maxRetriesPerRequest: null },
          })
        : this.client.duplicate({
            connectionName: `${this.client.options.connectionName ?? 'threadmill'}:${role}`,
            enableAutoPipelining: false,
            enableOfflineQueue: true,
            maxRetriesPerRequest: null,
            commandTimeout: undefined,
            retryStrategy,
          });
    this.watch(connection);
    this.dedicated.add(connection);
    connection.once('end', () => this.dedicated.delete(connection));
    return connection;
  }

  /**
   * A new connection for confirmed stores (`ConfirmedStores`): a WAIT blocks
   * its connection, so it is never the command connection, which claims,
   * acknowledgements and renewals share. Like the command connection it
   * buffers nothing; unlike it, it never sends a command again on a new
   * connection (a WAIT on another connection would confirm nothing, and a
   * resent store may have run): what was in flight when it dropped fails at
   * once. Its commands may wait behind a WAIT of up to `waitMs`.
   */
  openConfirming(waitMs: number): RedisClient {
    const own = {
      enableAutoPipelining: false,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.connectTimeoutMs + waitMs,
    };
    const connection =
      this.client instanceof Cluster
        ? this.client.duplicate(undefined, {
            enableOfflineQueue: false,
            enableAutoPipelining: false,
            redisOptions: { ...this.client.options.redisOptions, connectionName: 'threadmill:confirm', ...own },
          })
        : this.client.duplicate({
            connectionName: `${this.client.options.connectionName ?? 'threadmill'}:confirm`,
            retryStrategy,
            ...own,
          });
    this.watch(connection);
    this.dedicated.add(connection);
    connection.once('end', () => this.dedicated.delete(connection));
    return connection;
  }

  /** Closes every blocking and confirming connection, and the command connection if Threadmill opened it. */
  async close(): Promise<void> {
    this.outage.close();
    for (const connection of this.dedicated) connection.disconnect();
    this.dedicated.clear();
    if (!this.owned || this.client.status === 'end') return;
    if (this.client.status !== 'ready') {
      // QUIT would wait for a server that is not there.
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

  /**
   * Follows a connection: its outages are logged (`ConnectionOutage`), and its
   * latest error kept for `ready`'s message. ioredis would print every failed
   * attempt of a connection without an `error` listener.
   */
  private watch(connection: RedisClient): void {
    this.outage.watch(connection);
    connection.on('error', (error: Error) => {
      this.lastError = error.message;
    });
  }
}
