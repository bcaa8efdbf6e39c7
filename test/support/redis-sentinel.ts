import { RedisServer, freePort } from '@threadmill/nestjs/testing';
import type { RedisOptions } from 'ioredis';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command } from './redis-command.js';
import { waitUntil } from './wait.js';

/** The name the sentinels monitor the primary under (ioredis's `name`). */
export const SENTINEL_MASTER = 'mymaster';
/** Sentinels that must agree the primary is down before one of them fails it over. */
const QUORUM = 2;
/** How long the primary may not answer before a sentinel holds it down: a failover within seconds. */
const DOWN_AFTER_MS = 1_000;
const FAILOVER_TIMEOUT_MS = 5_000;
/** How many free ports a sentinel tries when the one it chose turns out taken. */
const PORT_ATTEMPTS = 5;

/**
 * One `redis-sentinel`: `redis-server <conf> --sentinel`, the same binary
 * (Debian's `redis-sentinel` package adds only a symlink and a service), on a
 * free loopback port with a directory of its own, where it rewrites its
 * configuration as it learns the topology.
 */
class SentinelProcess {
  private log = '';
  private exited: Promise<void> = Promise.resolve();

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(primaryPort: number): Promise<SentinelProcess> {
    for (let attempt = 1; ; attempt++) {
      const dir = mkdtempSync(join(tmpdir(), 'threadmill-sentinel-'));
      const port = await freePort();
      writeFileSync(
        join(dir, 'sentinel.conf'),
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primaryPort} ${QUORUM}`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER} ${DOWN_AFTER_MS}`,
          `sentinel failover-timeout ${SENTINEL_MASTER} ${FAILOVER_TIMEOUT_MS}`,
          `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
          '',
        ].join('\n'),
      );
      const child = spawn('redis-server', [join(dir, 'sentinel.conf'), '--sentinel', '--daemonize', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const sentinel = new SentinelProcess(port, dir, child);
      try {
        await sentinel.ready();
        return sentinel;
      } catch (error) {
        child.kill('SIGKILL');
        await sentinel.exited;
        rmSync(dir, { recursive: true, force: true });
        const taken = /Address already in use/.test(String((error as Error).message));
        if (!taken || attempt === PORT_ATTEMPTS) throw error;
      }
    }
  }

  /** Resolves once the sentinel monitors the primary (it prints no "Ready to accept connections"). */
  private ready(): Promise<void> {
    const { child } = this;
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.stderr!.on('data', (chunk: Buffer) => (this.log += chunk.toString()));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail('did not monitor its primary within 10 s'), 10_000);
      const onData = (chunk: Buffer) => {
        this.log += chunk.toString();
        if (/\+monitor master/.test(this.log)) {
          clearTimeout(timer);
          resolve();
        }
      };
      const fail = (why: string) => {
        clearTimeout(timer);
        reject(new Error(`redis sentinel on port ${this.port} failed to start: ${why}\n${this.log.slice(-2000)}`));
      };
      child.stdout!.on('data', onData);
      child.once('error', (error) => fail(error.message));
      child.once('exit', (code, signal) => fail(`exited (${code ?? signal})`));
    });
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      await this.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A primary (AOF on) with one replica, both throwaway servers, and three
 * sentinels monitoring them with a quorum of two: the topology a Sentinel
 * deployment runs, on loopback, for the tests. The replica has AOF on too, so
 * the primary it becomes after a failover is as durable as the one it replaces.
 */
export class SentinelRedis {
  private constructor(
    /** The servers, in start order: the first primary, then its replica. Their roles swap in a failover. */
    readonly servers: readonly [RedisServer, RedisServer],
    private readonly sentinels: SentinelProcess[],
  ) {}

  static async start(): Promise<SentinelRedis> {
    const primary = await RedisServer.start({ appendonly: true });
    const replica = await RedisServer.start({
      appendonly: true,
      args: ['--replicaof', '127.0.0.1', String(primary.port)],
    });
    const sentinels: SentinelProcess[] = [];
    const set = new SentinelRedis([primary, replica], sentinels);
    try {
      await waitUntil('the replica is in sync with its primary', async () =>
        /master_link_status:up/.test(String(await command(replica, 'INFO', 'replication'))),
      );
      for (let i = 0; i < 3; i++) sentinels.push(await SentinelProcess.start(primary.port));
      await waitUntil('every sentinel knows the replica and the other sentinels', async () => {
        const views = await Promise.all(sentinels.map((sentinel) => set.sentinelInfo(sentinel)));
        return views.every((info) => /slaves=1,sentinels=3/.test(info));
      });
    } catch (error) {
      await set.stop();
      throw error;
    }
    return set;
  }

  /** The `connection` option for Threadmill (and any ioredis client): the sentinels and the monitored name. */
  connection(): RedisOptions {
    return {
      sentinels: this.sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port })),
      name: SENTINEL_MASTER,
    };
  }

  /** The sentinels' ports, comma-separated, for a worker process (`REDIS_SENTINEL_PORTS`). */
  get sentinelPorts(): string {
    return this.sentinels.map((sentinel) => sentinel.port).join(',');
  }

  /** The server the sentinels name as the primary now (`SENTINEL GET-MASTER-ADDR-BY-NAME`, asked of every sentinel). */
  async primary(): Promise<RedisServer | undefined> {
    const ports = await Promise.all(
      this.sentinels.map(async (sentinel) => {
        const address = (await this.ask(sentinel, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER)) as
          [string, string] | null;
        return address ? Number(address[1]) : undefined;
      }),
    );
    // The sentinels agree once a failover's new configuration has reached them all.
    if (ports.some((port) => port !== ports[0])) return undefined;
    return this.servers.find((server) => server.port === ports[0]);
  }

  /**
   * Kills the primary with SIGKILL (a crash: no final write, its replica's
   * link just drops) and resolves with the replica once every sentinel names
   * it the primary and it answers as one.
   */
  async killPrimary(timeoutMs = 60_000): Promise<{ killed: RedisServer; promoted: RedisServer }> {
    const killed = await this.primary();
    if (!killed) throw new Error('the sentinels do not agree on a primary');
    const promoted = this.servers.find((server) => server !== killed)!;
    await killed.kill('SIGKILL');
    await this.promotedTo(promoted, timeoutMs);
    return { killed, promoted };
  }

  private async promotedTo(server: RedisServer, timeoutMs: number): Promise<void> {
    await waitUntil(
      `every sentinel names the server on port ${server.port} the primary, and it is one`,
      async () =>
        (await this.primary().catch(() => undefined)) === server &&
        /role:master/.test(String(await command(server, 'INFO', 'replication'))),
      timeoutMs,
    );
  }

  /** `SENTINEL MASTER`'s view, flattened (`INFO sentinel`'s line for the monitored primary). */
  private async sentinelInfo(sentinel: SentinelProcess): Promise<string> {
    return String(await this.ask(sentinel, 'INFO', 'sentinel'));
  }

  private ask(sentinel: SentinelProcess, ...args: string[]): Promise<unknown> {
    return command(sentinel, ...args);
  }

  /** Stops the sentinels first (so none fails over a server being stopped), then the servers; removes their directories. */
  async stop(): Promise<void> {
    await Promise.all(this.sentinels.map((sentinel) => sentinel.stop()));
    await Promise.all(this.servers.map((server) => server.stop()));
  }
}
