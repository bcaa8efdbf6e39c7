import { RedisServer } from '@threadmill/nestjs/testing';
import { command } from './redis-command.js';
import { waitUntil } from './wait.js';

/**
 * A standalone Redis master with one replica (`redis-server --replicaof`),
 * each a throwaway server of its own, for the tests of confirmed enqueues.
 */
export class ReplicatedRedis {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
  ) {}

  static async start(): Promise<ReplicatedRedis> {
    const master = await RedisServer.start({ appendonly: true });
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(master.port)] });
    const pair = new ReplicatedRedis(master, replica);
    await waitUntil('the replica is in sync with its master', async () => {
      const info = await command(replica, 'INFO', 'replication');
      return /master_link_status:up/.test(String(info));
    });
    return pair;
  }

  async stop(): Promise<void> {
    await Promise.all([this.replica.stop(), this.master.stop()]);
  }
}

/** How many WAIT commands `server` has run (`INFO commandstats`). */
export async function waitCalls(server: RedisServer): Promise<number> {
  const stats = String(await command(server, 'INFO', 'commandstats'));
  return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

/** Runs `body` with `server` frozen (SIGSTOP: its sockets stay open, it reads nothing), and thaws it after. */
export async function whileFrozen<T>(server: RedisServer, body: () => Promise<T>): Promise<T> {
  server.pause();
  try {
    return await body();
  } finally {
    server.resume();
  }
}
