/**
 * Where a Threadmill run's Redis memory goes, key by key: the memory row of
 * `npm run bench` (N runs of the benchmark's payload enqueued in bulk, then
 * finished by a worker at the defaults, results kept), with the keys of each
 * state taken apart.
 *
 * Run: `node dist/benchmarks/tools/memory-anatomy.js [N=100000] [sample=1000]` after `npm run build`.
 *
 * In each state (runs pending, runs finished) it SCANs every key, groups them
 * by name pattern (a name's segments that hold a digit, such as run ids, worker
 * ids and minutes, become `<…>`), and reads `TYPE`, `OBJECT ENCODING`, the
 * element count and `MEMORY USAGE … SAMPLES 0` of up to `sample` keys per
 * group, scaled to the group's key count. Grouping by pattern instead of by
 * the backend's key names keeps the tool right when the layout changes.
 * `MEMORY USAGE` counts a key's value, its name and its keyspace entry; the
 * rest of `used_memory`'s growth is no key's (the keyspace's bucket table,
 * Lua's script cache, clients: MEMORY STATS is printed below each table) or
 * allocated beyond what `MEMORY USAGE` counts (it takes a hash table entry
 * for its struct's 24 bytes, which the allocator serves from its 32-byte class).
 * A hash or sorted set in a table encoding gets the reason it is not a
 * listpack: the first element over the server's limit, or its count.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import Table from 'cli-table3';
import { Redis } from 'ioredis';
import { MEMORY_SERVER_OPTIONS, measureMemory } from '../lib/memory-phase.js';
import { MEMORY_SUBJECTS } from '../lib/memory-subjects.js';

const n = Number(process.argv[2] ?? 100_000);
const sampleSize = Number(process.argv[3] ?? 1_000);

/** The commands that count a key's elements, by its type. */
const LENGTH: Record<string, string | undefined> = {
  hash: 'hlen',
  zset: 'zcard',
  list: 'llen',
  set: 'scard',
  stream: 'xlen',
  string: 'strlen',
};

interface Group {
  readonly pattern: string;
  readonly keys: string[];
}

const varies = (segment: string) => /\d/.test(segment) || (/[a-z]/.test(segment) && /[A-Z]/.test(segment));

/**
 * A key name with the segments that vary between keys of one kind as `<…>`:
 * those that hold a digit or mix cases (ids, minutes), but the hash tag.
 */
function pattern(key: string): string {
  return key
    .split(':')
    .map((segment) => (varies(segment) && !segment.startsWith('{') ? '<…>' : segment))
    .join(':');
}

async function scanGroups(redis: Redis): Promise<Group[]> {
  const groups = new Map<string, string[]>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1_000);
    cursor = next;
    for (const key of keys) {
      const p = pattern(key);
      let group = groups.get(p);
      if (!group) groups.set(p, (group = []));
      group.push(key);
    }
  } while (cursor !== '0');
  return [...groups].map(([p, keys]) => ({ pattern: p, keys }));
}

/** Up to `size` keys spread evenly over `keys`. */
function sample(keys: readonly string[], size: number): string[] {
  if (keys.length <= size) return [...keys];
  return Array.from({ length: size }, (_, i) => keys[Math.floor((i * keys.length) / size)]!);
}

interface Anatomy {
  readonly pattern: string;
  readonly keys: number;
  readonly type: string;
  readonly encodings: string;
  /** Elements per key (fields, members, entries, or a string's bytes), averaged over the sample. */
  readonly elements: number;
  /** MEMORY USAGE of the group, scaled from the sample. */
  readonly bytes: number;
  /** Why a hash or sorted set of the group is not a listpack, or ''. */
  readonly why: string;
}

/**
 * Why `key`, a hash or sorted set in a table encoding, is not a listpack:
 * too many elements, or an element longer than the server's limit (the
 * first such field or member is named).
 */
async function notCompact(redis: Redis, key: string, type: string, elements: number): Promise<string> {
  if (type !== 'hash' && type !== 'zset') return '';
  const [, entries] = (await redis.config('GET', `${type}-max-listpack-entries`)) as [string, string];
  const [, value] = (await redis.config('GET', `${type}-max-listpack-value`)) as [string, string];
  if (elements > Number(entries)) return `${fmt(elements)} > ${type}-max-listpack-entries ${entries}`;
  const items = type === 'hash' ? await redis.hgetall(key) : { member: (await redis.zrange(key, 0, -1)).join('') };
  for (const [field, text] of Object.entries(items)) {
    const long = Math.max(Buffer.byteLength(field), Buffer.byteLength(text));
    if (long > Number(value)) return `${field}: ${long} bytes > ${type}-max-listpack-value ${value}`;
  }
  return '';
}

/** The distinct `values`, each with its count when they differ. */
const tally = (values: string[]) =>
  [...new Set(values)].map((v) => (new Set(values).size > 1 ? `${v} ×${values.filter((x) => x === v).length}` : v));

async function dissect(redis: Redis, group: Group): Promise<Anatomy> {
  const keys = sample(group.keys, sampleSize);
  const types = await Promise.all(keys.map((key) => redis.type(key)));
  const replies = await Promise.all(
    keys.map(async (key, i) => {
      const length = LENGTH[types[i]!];
      const [encoding, usage, elements] = await Promise.all([
        redis.object('ENCODING', key) as Promise<string>,
        redis.memory('USAGE', key, 'SAMPLES', 0) as Promise<number | null>,
        length ? (redis.call(length, key) as Promise<number>) : 0,
      ]);
      return { encoding, usage: usage ?? 0, elements };
    }),
  );
  const scale = group.keys.length / keys.length;
  const table = replies.findIndex((r) => r.encoding === 'hashtable' || r.encoding === 'skiplist');
  return {
    why: table < 0 ? '' : await notCompact(redis, keys[table]!, types[table]!, replies[table]!.elements),
    pattern: group.pattern,
    keys: group.keys.length,
    type: tally(types).join(', '),
    encodings: tally(replies.map((r) => r.encoding)).join(', '),
    elements: replies.reduce((sum, r) => sum + r.elements, 0) / keys.length,
    bytes: replies.reduce((sum, r) => sum + r.usage, 0) * scale,
  };
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Prints the keys of one state, biggest first, and what MEMORY USAGE leaves of `used_memory`'s growth. */
async function report(state: string, redis: Redis, grown: number): Promise<void> {
  const groups = await scanGroups(redis);
  const rows = (await Promise.all(groups.map((group) => dissect(redis, group)))).sort((a, b) => b.bytes - a.bytes);
  const table = new Table({
    head: ['key', 'keys', 'type', 'encoding', 'why not a listpack', 'elements per key', 'bytes', 'bytes per run'],
    style: { head: ['cyan'] },
  });
  for (const row of rows) {
    table.push([
      row.pattern,
      fmt(row.keys),
      row.type,
      row.encodings,
      row.why,
      fmt(row.elements, 1),
      fmt(row.bytes),
      fmt(row.bytes / n, 1),
    ]);
  }
  const counted = rows.reduce((sum, row) => sum + row.bytes, 0);
  table.push(
    ['MEMORY USAGE, all keys', '', '', '', '', '', fmt(counted), fmt(counted / n, 1)],
    ['used_memory growth', '', '', '', '', '', fmt(grown), fmt(grown / n, 1)],
    ['rest: no key’s, or uncounted', '', '', '', '', '', fmt(grown - counted), fmt((grown - counted) / n, 1)],
  );
  console.log(`\n${fmt(n)} runs ${state}:`);
  console.log(table.toString());
  console.log(`Besides the keys (MEMORY STATS): ${await overheads(redis)}.`);
  // What one field of a hash that holds a record per run holds (fresh, done).
  for (const row of rows.filter((r) => r.type === 'hash' && r.elements >= n / 2)) {
    const key = groups.find((group) => group.pattern === row.pattern)!.keys[0]!;
    const [id, value] = (await redis.hrandfield(key, 1, 'WITHVALUES')) as string[];
    if (id !== undefined && value !== undefined) {
      console.log(
        `One field of ${row.pattern}: ${Buffer.byteLength(id)}-byte id, ${Buffer.byteLength(value)}-byte record ${value}`,
      );
    }
  }
  // What one of the keys a run has to itself holds, field by field.
  const perRun = groups.find(
    (group) => group.keys.length > 1 && rows.some((r) => r.pattern === group.pattern && r.type === 'hash'),
  );
  if (perRun) {
    const fields = Object.entries(await redis.hgetall(perRun.keys[0]!));
    const listed = fields.map(([field, value]) => `${field} ${Buffer.byteLength(value)}`).join(', ');
    console.log(`Fields of one ${perRun.pattern} (bytes of each value): ${listed}.`);
  }
}

/** Parts of `used_memory` that are no key's, as MEMORY STATS gives them. */
async function overheads(redis: Redis): Promise<string> {
  const flat = (await redis.call('MEMORY', 'STATS')) as unknown[];
  const stats = new Map<string, unknown>();
  for (let i = 0; i < flat.length; i += 2) stats.set(String(flat[i]), flat[i + 1]);
  const db = (stats.get('db.0') as unknown[] | undefined) ?? [];
  const dbStat = (name: string) => Number(db[db.indexOf(name) + 1] ?? 0);
  return [
    `keyspace tables ${fmt(dbStat('overhead.hashtable.main'))} bytes (their entries and value headers included)`,
    `expiry table ${fmt(dbStat('overhead.hashtable.expires'))}`,
    `clients ${fmt(Number(stats.get('clients.normal')))}`,
    `Lua caches ${fmt(Number(stats.get('lua.caches')))}`,
  ].join(', ');
}

const server = await RedisServer.start(MEMORY_SERVER_OPTIONS);
const redis = new Redis(server.url);
try {
  const result = await measureMemory(MEMORY_SUBJECTS['threadmill-defaults']!, server.url, redis, n, {
    pending: (r, grown) => report('pending (enqueued in bulk, no worker yet)', r, grown),
    finished: (r, grown) => report('finished (results kept, the worker stopped)', r, grown),
  });
  console.log(
    `\nBytes per run: ${fmt(result.pendingBytesPerRun)} pending, ${fmt(result.finishedBytesPerRun)} finished (the memory row of npm run bench).`,
  );
} finally {
  redis.disconnect();
  await server.stop();
}
