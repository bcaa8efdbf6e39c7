#!/usr/bin/env node
// What a layout that stores a bulk call as one value would save Redis: the
// enqueue script against a sketch of that layout's store (the call's group
// value kept whole as one hash field with its enqueue time, one ready-list
// entry for the call, the wake marker), each called with the same kind of
// batch (1,000 new runs of the benchmark's payload, as the client encodes
// them) on keys of its own in one fresh redis-server, turn about; and, for
// scale, a script that only returns. Figures are the scripts' time (INFO
// commandstats) per run, medians over the rounds. The sketch leaves out what
// such a layout would add elsewhere: claims cutting runs out of the value,
// and a lookup by id finding its call. Usage: node call-value-cost.mjs
// [rounds=120] [flushEvery=20] (the first 20 rounds are warm-up)
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRun } from './bench-run.mjs';

const rounds = Number(process.argv[2] ?? 120);
const flushEvery = Number(process.argv[3] ?? 20);
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { LUA_SOURCES } = await import(join(lib, 'backend/redis/scripts/lua-sources.generated.js'));
const { encodeStore } = await import(join(lib, 'backend/redis/scripts/enqueue-args.js'));
const { newRunId } = await import(join(lib, 'codec/run-id.js'));

const N = 1000;
const callValue = `local seq = redis.call('INCRBY', KEYS[1], ${N})
local now = redis.call('TIME')[1]
redis.call('HSET', KEYS[2], seq, now .. '|' .. ARGV[#ARGV])
redis.call('RPUSH', KEYS[3], seq)
redis.call('ZADD', KEYS[4], 0, 'w')
return now`;
// The enqueue script's keys, as the backend passes them (one hash tag).
const backendKeys = ['seq', 'wake', 'run:', 'fresh', 'leases', 'q:', 'inbox:'];
const queueKeys = ['ready', 'deferred', 'qwake', 'stats', 'metrics:', 'running', 'idle', 'ready-list'];
const enqueueKeys = backendKeys.concat(queueKeys).map((name) => `{e}${name}`);
const sketchKeys = ['seq', 'calls', 'ready-list', 'qwake'].map((name) => `{c}${name}`);
const scripts = [
  ['the enqueue script', LUA_SOURCES.enqueue, enqueueKeys],
  ['one value per call (sketch)', callValue, sketchKeys],
  ['a script that only returns', 'return 1', sketchKeys],
];

const server = await RedisServer.start();
const redis = new Redis(server.url);
const shas = await Promise.all(scripts.map(([, source]) => redis.script('LOAD', source)));
const costs = scripts.map(() => []);
for (let round = 0; round < rounds; round++) {
  if (round % flushEvery === 0) await redis.flushall();
  for (let turn = 0; turn < scripts.length; turn++) {
    const s = (turn + round) % scripts.length;
    const runs = Array.from({ length: N }, (_, i) => benchRun(newRunId, round * N + i));
    const args = encodeStore(['bench'], runs, () => 1);
    const keys = scripts[s][2];
    await redis.config('RESETSTAT');
    await redis.evalsha(shas[s], keys.length, ...keys, ...args);
    const stats = await redis.info('commandstats');
    if (round >= 20) costs[s].push(Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(stats)[1]));
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (let s = 0; s < scripts.length; s++) {
  console.log(`${scripts[s][0].padEnd(30)} ${(median(costs[s]) / N).toFixed(2)} µs per run`);
}
await redis.quit();
await server.stop();
