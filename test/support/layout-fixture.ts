import type { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';

/** One key of the layout-1 fixture, as `test/fixtures/layout-1/generate.mjs` dumped it. */
interface FixtureKey {
  readonly name: string;
  readonly type: string;
  /** Its TTL when dumped (ms), or -1. */
  readonly pttl: number;
  /** Its DUMP payload, base64. */
  readonly dump: string;
  /** Its value, readable (for review: the payload is what is restored). */
  readonly value: unknown;
}

/** Which fixture runs are in which state (`test/fixtures/layout-1/expected.json`). */
export interface LayoutOneRuns {
  /** READY runs by queue, in ready order; those of `default` record their id (`OrderService.record`). */
  readonly ready: { readonly default: string[]; readonly emails: string[] };
  readonly dequeued: string[];
  readonly retried: string[];
  readonly deferredFuture: string[];
  readonly deferredPast: string[];
  readonly held: string[];
  readonly reaped: string[];
  readonly suspect: string[];
  readonly inbox: string[];
  readonly successful: string[];
  readonly failed: string[];
  readonly quarantined: string[];
}

/** The key prefix of backend `alias`. */
export function prefixOf(alias: string): string {
  return `threadmill:{${alias}}:`;
}

const read = <T>(file: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/layout-1/${file}`, import.meta.url), 'utf8')) as T;

const dumped = read<{ alias: string; generatedAt: number; keys: FixtureKey[] }>('keys.json');

/** The layout-1 fixture: a keyspace written by Threadmill's storage layout 1 (commit a45171a). */
export const LAYOUT_ONE = {
  ...read<{
    leaseTtlMs: number;
    resultTtlMs: number;
    farFuture: number;
    workers: Record<'held' | 'brief' | 'inbox' | 'idle', string>;
    runs: LayoutOneRuns;
    idleRegistrations: string[];
  }>('expected.json'),
  /** How long the finished run that expires first had left when the keys were dumped (ms). */
  finishedTtlMs: Math.min(
    ...dumped.keys.filter((key) => key.name.includes(':run:') && key.pttl > 0).map((key) => key.pttl),
  ),
  /** The lease values layout 1 wrote, by run id. */
  leases: dumped.keys.find((key) => key.name === `${prefixOf(dumped.alias)}leases`)!.value as Record<string, string>,
};

async function redisNow(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

/** How to place the fixture's times relative to the Redis clock of the test. */
export interface RestoreOptions {
  /**
   * The fixture's leases (held, started, delivered, the broker's claim) end
   * this long after the restore, all at once: their stored deadlines are long
   * past, and a test looks at them before they expire.
   */
  readonly leasesExpireInMs: number;
  /**
   * Restore the keys as they were this long after they were dumped: TTLs are
   * shortened by it (a key whose TTL it exceeds is left out, as Redis would
   * have expired it) and finished runs finished this much longer ago.
   * @defaultValue 0
   */
  readonly ageMs?: number;
}

/**
 * RESTOREs every key of the layout-1 fixture under backend `alias` (only the
 * hash tag changes: names that embed a worker id or a queue keep it), with
 * its TTL as dumped. Finished indexes and the finish times of their runs are
 * shifted to the test's clock (their runs finished as long before the restore
 * as before the dump), so they agree with their run hashes' TTLs; deferred
 * due times stay as stored.
 */
export async function restoreLayoutOne(redis: Redis, alias: string, options: RestoreOptions): Promise<void> {
  const ageMs = options.ageMs ?? 0;
  const now = await redisNow(redis);
  const from = prefixOf(dumped.alias);
  const to = prefixOf(alias);
  const shift = now - dumped.generatedAt - ageMs;
  for (const key of dumped.keys) {
    const ttl = key.pttl > 0 ? key.pttl - ageMs : 0;
    if (key.pttl > 0 && ttl <= 0) continue;
    const name = to + key.name.slice(from.length);
    await redis.restore(name, ttl, Buffer.from(key.dump, 'base64'));
    if (/:q:[^:]+:running$/.test(name)) {
      const deadline = now + options.leasesExpireInMs;
      for (const id of await redis.zrange(name, 0, -1)) await redis.zadd(name, 'XX', deadline, id);
    } else if (/:q:[^:]+:(successful|failed)$/.test(name)) {
      const flat = await redis.zrange(name, 0, -1, 'WITHSCORES');
      for (let i = 0; i < flat.length; i += 2) await redis.zadd(name, 'XX', Number(flat[i + 1]) + shift, flat[i]!);
    } else if (/:run:/.test(name)) {
      // Its finish time moves with its index entry's, as the two agreed when dumped.
      const finishedAt = await redis.hget(name, 'finishedAt');
      if (finishedAt) await redis.hset(name, 'finishedAt', String(Number(finishedAt) + shift));
    }
  }
}

/** The names of every key of backend `alias`, sorted. */
export async function keysOf(redis: Redis, alias: string): Promise<string[]> {
  const names: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefixOf(alias)}*`, 'COUNT', 1_000);
    names.push(...found);
    cursor = next;
  } while (cursor !== '0');
  return names.sort();
}

/** Copies every key of backend `from`, with its TTL, to backend `to`. */
export async function copyKeys(redis: Redis, from: string, to: string): Promise<void> {
  for (const name of await keysOf(redis, from)) {
    const ttl = await redis.pttl(name);
    const target = prefixOf(to) + name.slice(prefixOf(from).length);
    await redis.restore(target, Math.max(ttl, 0), await redis.dumpBuffer(name));
  }
}

/** Every key of backend `alias` with its DUMP payload (base64), by name: what a write would change. */
export async function dumpsOf(redis: Redis, alias: string): Promise<Record<string, string>> {
  const dumps: Record<string, string> = {};
  for (const name of await keysOf(redis, alias)) dumps[name] = (await redis.dumpBuffer(name)).toString('base64');
  return dumps;
}

/**
 * Every key of backend `alias` by its name after the prefix, with its type,
 * its value (hashes and sets in a stable order) and whether it has a TTL: a
 * state to compare with another alias's.
 */
export async function stateOf(redis: Redis, alias: string): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  const prefix = prefixOf(alias);
  for (const name of await keysOf(redis, alias)) {
    const type = await redis.type(name);
    let value: unknown;
    if (type === 'string') value = await redis.get(name);
    else if (type === 'hash') value = Object.entries(await redis.hgetall(name)).sort();
    else if (type === 'list') value = await redis.lrange(name, 0, -1);
    else if (type === 'set') value = (await redis.smembers(name)).sort();
    else value = await redis.zrange(name, 0, -1, 'WITHSCORES');
    state[name.slice(prefix.length)] = { type, value, expires: (await redis.pttl(name)) > 0 };
  }
  return state;
}
