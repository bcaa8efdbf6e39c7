/**
 * What keeping pending runs in one hash saves Redis: the core of enqueue, claim and acknowledge in two layouts.
 *
 * Run: `node dist/benchmarks/tools/layout-cost.js` after `npm run build`.
 *
 * The scripts' cores only (no metrics, one queue), run against a fresh
 * redis-server in two layouts, A = a hash per run (before step 13), B =
 * pending runs as fields of one shared hash; prints Redis time (INFO
 * commandstats) per run, twice each. The scripts are sketches of their own,
 * not the library's: they record what the two layouts cost when step 13 was
 * measured.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { commandUs } from '../lib/tool-support.js';

const server = await RedisServer.start();
const r = new Redis(server.url);
await r.flushall();
const N = 60000,
  B = 300,
  EB = 1000;
const enqB = `
local now = 1700000000000
local nowText = tostring(now)
local seq = redis.call('INCRBY', 'seq', #ARGV / 2)
local recs, adds = {}, {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local score = 100 * 17592186044416 + seq + i
  recs[#recs + 1] = id
  recs[#recs + 1] = nowText .. '|' .. score .. '|0||default|' .. ARGV[i + 1]
  adds[#adds + 1] = score
  adds[#adds + 1] = id
end
for f = 1, #recs, 1000 do redis.call('HSET', 'fresh', unpack(recs, f, math.min(f + 999, #recs))) end
for f = 1, #adds, 1000 do redis.call('ZADD', 'ready', unpack(adds, f, math.min(f + 999, #adds))) end
return 1`;
const enqA = `
local now = 1700000000000
local nowText = tostring(now)
local seq = redis.call('INCRBY', 'seq', #ARGV / 2)
local adds = {}
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local score = 100 * 17592186044416 + seq + i
  redis.call('HSET', 'run:' .. id, 'payload', ARGV[i + 1], 'queue', 'default', 'score', score, 'enqueuedAt', nowText)
  adds[#adds + 1] = score
  adds[#adds + 1] = id
end
for f = 1, #adds, 1000 do redis.call('ZADD', 'ready', unpack(adds, f, math.min(f + 999, #adds))) end
return 1`;
const claimB = `
local now = 1700000000000
local popped = redis.call('ZPOPMIN', 'ready', ${B})
local ids = {}
for p = 1, #popped, 2 do ids[#ids + 1] = popped[p] end
local recs = redis.call('HMGET', 'fresh', unpack(ids))
local runs, lease, values = {}, {}, {}
local tail = '|' .. now .. '|1|0|"host:1:0"'
local dl = tostring(now + 30000)
local tok = redis.call('INCRBY', 'seq', #ids) - #ids
local waited = 0
for i = 1, #ids do
  local rec = recs[i]
  local enq, ttl = string.match(rec, '^(%d+)|[^|]*|(%d*)|')
  waited = waited + (now - tonumber(enq))
  local token = tok + i
  values[#values + 1] = ids[i]
  values[#values + 1] = token .. tail
  lease[#lease + 1] = dl
  lease[#lease + 1] = ids[i]
  runs[#runs + 1] = ids[i]
  runs[#runs + 1] = token
  runs[#runs + 1] = rec
end
redis.call('HSET', 'leases', unpack(values))
redis.call('ZADD', 'running', unpack(lease))
return runs`;
const claimA = `
local now = 1700000000000
local popped = redis.call('ZPOPMIN', 'ready', ${B})
local runs, lease, values = {}, {}, {}
local tail = '|' .. now .. '|1|0|"host:1:0"'
local dl = tostring(now + 30000)
local tok = redis.call('INCRBY', 'seq', #popped / 2) - #popped / 2
local waited = 0
for p = 1, #popped, 2 do
  local id = popped[p]
  local f = redis.call('HMGET', 'run:' .. id, 'payload', 'attempts', 'enqueuedAt', 'leaseTtl', 'recoveries')
  waited = waited + (now - tonumber(f[3]))
  local token = tok + (p + 1) / 2
  values[#values + 1] = id
  values[#values + 1] = token .. tail
  lease[#lease + 1] = dl
  lease[#lease + 1] = id
  runs[#runs + 1] = id
  runs[#runs + 1] = 1
  runs[#runs + 1] = token
  runs[#runs + 1] = now + 30000
  runs[#runs + 1] = f[1]
  runs[#runs + 1] = f[3]
  runs[#runs + 1] = 0
end
redis.call('HSET', 'leases', unpack(values))
redis.call('ZADD', 'running', unpack(lease))
return runs`;
const ackCore = (del: string) => `
local ids = {}
for i = 1, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local ls = redis.call('HMGET', 'leases', unpack(ids))
local ds = redis.call('ZMSCORE', 'running', unpack(ids))
local ok, keys = {}, {}
for i = 1, #ids do
  local tok = ARGV[2 * i]
  if ls[i] and tonumber(ds[i]) >= 0 and string.sub(ls[i], 1, #tok + 1) == tok .. '|' then ok[#ok + 1] = ids[i]; keys[#keys + 1] = 'run:' .. ids[i] end
end
redis.call('HDEL', 'leases', unpack(ok))
redis.call('ZREM', 'running', unpack(ok))
${del}
return #ok`;
const ackB = ackCore(`redis.call('HDEL', 'fresh', unpack(ok))`);
const ackA = ackCore(`redis.call('DEL', unpack(keys))`);
const payload = (i: number) => `["bench.noop",[{"id":${i},"email":"user${i}@example.com"}]]`;
for (const [label, enq, claim, ack] of [
  ['A (hash per run)', enqA, claimA, ackA],
  ['B (shared hash)', enqB, claimB, ackB],
  ['A (hash per run)', enqA, claimA, ackA],
  ['B (shared hash)', enqB, claimB, ackB],
] as const) {
  // A claim's reply holds 7 values per run in A (id, attempt, token, ...), 3 in B (id, token, record).
  const [stride, tokenAt] = label.startsWith('A') ? [7, 2] : [3, 1];
  await r.flushall();
  await r.config('RESETSTAT');
  for (let i = 0; i < N; i += EB) {
    await r.eval(enq, 0, ...Array.from({ length: EB }, (_, j) => [`id${i + j}`, payload(i + j)]).flat());
  }
  const e = await commandUs(r, 'eval');
  await r.config('RESETSTAT');
  const leased: string[] = [];
  for (let i = 0; i < N; i += B) {
    const runs = (await r.eval(claim, 0)) as (string | number)[];
    for (let k = 0; k < runs.length; k += stride) leased.push(String(runs[k]), String(runs[k + tokenAt]));
  }
  const c = await commandUs(r, 'eval');
  await r.config('RESETSTAT');
  for (let i = 0; i < leased.length; i += 2 * B) await r.eval(ack, 0, ...leased.slice(i, i + 2 * B));
  const a = await commandUs(r, 'eval');
  const perRun = (us: number) => (us / N).toFixed(2);
  console.log(
    `${label}: enqueue ${perRun(e)}, claim ${perRun(c)}, ack ${perRun(a)}, drain ${perRun(c + a)} µs/run; ` +
      `left: running ${await r.zcard('running')}, fresh ${await r.hlen('fresh')}, keys ${await r.dbsize()}`,
  );
}
r.disconnect();
await server.stop();
