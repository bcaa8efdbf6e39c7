import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnections } from '../../libs/threadmill/src/backend/redis/redis-connections.js';
import { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import { LUA_SOURCES } from '../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import { STORAGE_LAYOUT } from '../../libs/threadmill/src/backend/redis/storage-layout.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { copyKeys, prefixOf, stateOf } from '../support/layout-fixture.js';

/** The one-call upgrade.lua before issue 45, which scanned every key in one script call: the expected outcome. */
const ONE_SHOT = readFileSync(new URL('../fixtures/layout-upgrade/one-shot-upgrade.lua', import.meta.url), 'utf8');
const UPGRADE_SHA = createHash('sha1').update(LUA_SOURCES.upgrade).digest('hex');

/**
 * A layout-1 keyspace of `kept` successes kept in two queues' successful sets
 * (one queue registered, one only ever named by a producer) and `leased`
 * layout-1 leases, a third of them under a start a suspect recorded.
 */
async function layoutOne(redis: Redis, alias: string, kept: number, leased: number): Promise<void> {
  const prefix = prefixOf(alias);
  const finishedAt = Date.now() - 60_000;
  for (let from = 0; from < kept; from += 1000) {
    const queue = from < kept * 0.8 ? 'a' : 'b';
    const entries = Array.from({ length: Math.min(1000, kept - from) }, (_, i) => [
      finishedAt + from + i,
      `s-${from + i}`,
    ]);
    await redis.zadd(`${prefix}q:${queue}:successful`, ...entries.flat());
  }
  for (let from = 0; from < leased; from += 500) {
    const pipeline = redis.pipeline();
    for (let i = from; i < Math.min(from + 500, leased); i++) {
      pipeline.hset(`${prefix}leases`, `l-${i}`, `${1000 + i}|${finishedAt}|1|0|"host:1:0"`);
      if (i % 3 === 0) pipeline.hset(`${prefix}run:l-${i}`, 'queue', 'a', 'startedToken', String(1000 + i));
    }
    await pipeline.exec();
  }
  await redis.sadd(`${prefix}queues`, 'a', 'c');
  await redis.set(`${prefix}q:a:idle`, '1');
  await redis.set(`${prefix}seq`, String(kept));
}

/** Calls of EVALSHA the server has run so far. */
async function evalshaCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

describe('an upgrade of the storage layout in chunks', () => {
  let redis: Redis;
  const backends: RedisTaskBackend[] = [];
  beforeAll(() => {
    redis = new Redis(redisUrl());
  });
  afterAll(async () => {
    await Promise.all(backends.map((backend) => backend.connections.close()));
    await redis.quit();
  });

  const backendOf = (alias: string): RedisTaskBackend => {
    const connections = new RedisConnections(redisUrl(), alias, 5_000);
    const backend = new RedisTaskBackend(connections, {
      alias,
      leaseTtlMs: 1_000,
      resultTtlMs: 60_000,
      batchSize: 100,
    });
    backends.push(backend);
    return backend;
  };

  it('takes 50,000 kept runs and 5,000 leases from layout 1 in bounded calls, to what the one-call upgrade made', async () => {
    const chunked = uniqueAlias('upgrade');
    const oneShot = uniqueAlias('upgrade');
    await layoutOne(redis, chunked, 50_000, 5_000);
    await copyKeys(redis, chunked, oneShot);
    const k = prefixOf(oneShot);
    const keys = [`${k}layout`, `${k}leases`, `${k}run:`, `${k}queues`, `${k}q:`, `${k}seq`];
    expect(await redis.eval(ONE_SHOT, keys.length, ...keys, STORAGE_LAYOUT)).toEqual([1, STORAGE_LAYOUT]);

    const callsBefore = await evalshaCalls(redis);
    // Three processes booting together share the walk.
    await Promise.all([1, 2, 3].map(() => backendOf(chunked).prepare()));
    const calls = (await evalshaCalls(redis)) - callsBefore;

    // 50,000 index entries moved twice (set to list, then rotated): many calls, each of a bounded number
    // of entries (their time, measured where the machine is quiet, is in docs/scale.md: a bound on time
    // here would fail whenever the machine is busy).
    expect(calls).toBeGreaterThan(50);
    expect(await stateOf(redis, chunked)).toEqual(await stateOf(redis, oneShot));
    expect(await redis.exists(`${prefixOf(chunked)}upgrade`)).toBe(0);
    expect(await redis.lindex(`${prefixOf(chunked)}q:a:successful`, 0)).toBe('s-0');
  });

  it('marks the keys at its first call, so an older process refuses them while the walk goes on', async () => {
    const alias = uniqueAlias('upgrade');
    await layoutOne(redis, alias, 5_000, 10);
    const p = prefixOf(alias);
    const keys = [`${p}layout`, `${p}leases`, `${p}run:`, `${p}queues`, `${p}q:`, `${p}seq`, `${p}upgrade`];
    const first = (await redis
      .evalsha(UPGRADE_SHA, keys.length, ...keys, STORAGE_LAYOUT, 100)
      .catch(() => redis.eval(LUA_SOURCES.upgrade, keys.length, ...keys, STORAGE_LAYOUT, 100))) as number[];
    expect(first.slice(0, 3)).toEqual([1, STORAGE_LAYOUT, 0]);
    expect(await redis.get(`${p}layout`)).toBe(String(STORAGE_LAYOUT));
    expect(await redis.hget(`${p}upgrade`, 'from')).toBe('1');
    // A process of this version that boots now finishes the walk before it serves.
    await backendOf(alias).prepare();
    expect(await redis.exists(`${p}upgrade`)).toBe(0);
    expect(await redis.llen(`${p}q:a:successful`)).toBe(4_000);
    expect(await redis.lindex(`${p}q:b:successful`, -1)).toBe('s-4999');
  });
});
