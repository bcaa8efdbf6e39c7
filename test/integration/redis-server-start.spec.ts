import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * `RedisServer.start` picks a free port, but another process may bind it
 * before the server does (or, on a cluster node, its bus port 10,000 above).
 * A real collision cannot be timed, so a wrapper of the real `redis-server`
 * stands in for the first launches: it fails them as `redis-server` does on a
 * taken port, and starts the real server after.
 */
describe('RedisServer.start', () => {
  const cleanup: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  /** A `redis-server` that reports its port taken for its first `collisions` launches; the ports it was given, in order. */
  function collidingBinary(collisions: number): { binary: string; ports: () => number[] } {
    const dir = mkdtempSync(join(tmpdir(), 'threadmill-colliding-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const log = join(dir, 'ports');
    const binary = join(dir, 'redis-server');
    writeFileSync(log, '');
    writeFileSync(
      binary,
      [
        '#!/bin/sh',
        // The port follows `--port` in the arguments RedisServer passes.
        `port=$(echo "$@" | sed -n 's/.*--port \\([0-9]*\\).*/\\1/p')`,
        `echo "$port" >> '${log}'`,
        `if [ "$(wc -l < '${log}')" -le ${collisions} ]; then`,
        `  echo "# Warning: Could not create server TCP listening socket 127.0.0.1:$port: bind: Address already in use"`,
        '  exit 1',
        'fi',
        'exec redis-server "$@"',
        '',
      ].join('\n'),
    );
    chmodSync(binary, 0o755);
    return { binary, ports: () => readFileSync(log, 'utf8').trim().split('\n').map(Number) };
  }

  it('starts on another free port when the one it chose turns out taken', async () => {
    const { binary, ports } = collidingBinary(2);
    const server = await RedisServer.start({ binary });
    cleanup.push(() => server.stop());

    const tried = ports();
    expect(tried).toHaveLength(3);
    expect(new Set(tried).size).toBe(3);
    expect(server.port).toBe(tried[2]);
    const client = new Redis(server.url);
    cleanup.push(() => client.quit());
    expect(await client.ping()).toBe('PONG');
  });

  it('gives up after five taken ports, naming the error', async () => {
    const { binary, ports } = collidingBinary(100);
    await expect(RedisServer.start({ binary })).rejects.toThrow(/Address already in use/);
    expect(ports()).toHaveLength(5);
  });

  it('does not move a port the caller chose', async () => {
    const { binary, ports } = collidingBinary(1);
    // The wrapper fails before binding anything: the port is never really used.
    await expect(RedisServer.start({ binary, port: 40_001 })).rejects.toThrow(/Address already in use/);
    expect(ports()).toHaveLength(1);
  });
});
