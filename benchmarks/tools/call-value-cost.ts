/**
 * What storing a bulk call as one value would save Redis: the enqueue script against a sketch of that store.
 *
 * Run: `node dist/benchmarks/tools/call-value-cost.js [rounds=120] [flushEvery=20]` after `npm run build`
 * (the first 20 rounds are warm-up).
 *
 * The sketch keeps the call's group value whole as one hash field with its
 * enqueue time, one ready-list entry for the call and the wake marker. Each
 * script, and for scale one that only returns, is called with the same kind
 * of batch (1,000 new runs of the benchmark's payload, as the client encodes
 * them) on keys of its own in one fresh redis-server, turn about. Figures
 * are the scripts' time (INFO commandstats) per run, medians over the
 * rounds. The sketch leaves out what such a layout would add elsewhere:
 * claims cutting runs out of the value, and a lookup by id finding its call.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { benchRun, commandUs, enqueueScript, libraryBuild, loadModule, median } from '../lib/tool-support.js';

const rounds = Number(process.argv[2] ?? 120);
const flushEvery = Number(process.argv[3] ?? 20);
const lib = libraryBuild();
const enqueue = await enqueueScript(lib);
const { newRunId } = await loadModule(lib, 'codec/run-id.js');

const N = 1000;
const callValue = `local seq = redis.call('INCRBY', KEYS[1], ${N})
local now = redis.call('TIME')[1]
redis.call('HSET', KEYS[2], seq, now .. '|' .. ARGV[#ARGV])
redis.call('RPUSH', KEYS[3], seq)
redis.call('ZADD', KEYS[4], 0, 'w')
return now`;
const sketchKeys = ['seq', 'calls', 'ready-list', 'qwake'].map((name) => `{c}${name}`);
const scripts: [label: string, source: string, keys: string[]][] = [
  ['the enqueue script', enqueue.source, enqueue.keys('e')],
  ['one value per call (sketch)', callValue, sketchKeys],
  ['a script that only returns', 'return 1', sketchKeys],
];

const server = await RedisServer.start();
const redis = new Redis(server.url);
const shas = await Promise.all(scripts.map(([, source]) => redis.script('LOAD', source) as Promise<string>));
const costs: number[][] = scripts.map(() => []);
for (let round = 0; round < rounds; round++) {
  if (round % flushEvery === 0) await redis.flushall();
  for (let turn = 0; turn < scripts.length; turn++) {
    const s = (turn + round) % scripts.length;
    const args = enqueue.args(Array.from({ length: N }, (_, i) => benchRun(newRunId, round * N + i)));
    const keys = scripts[s]![2];
    await redis.config('RESETSTAT');
    await redis.evalsha(shas[s]!, keys.length, ...keys, ...args);
    if (round >= 20) costs[s]!.push(await commandUs(redis));
  }
}
scripts.forEach(([label], s) => console.log(`${label.padEnd(30)} ${(median(costs[s]!) / N).toFixed(2)} µs per run`));
await redis.quit();
await server.stop();
