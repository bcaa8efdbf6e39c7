#!/usr/bin/env node
// Where a bulk enqueue's Redis time goes: the enqueue script, and copies of
// it that stop (return) after each of its stages, each called with the same
// kind of batch (1,000 new runs of the benchmark's payload, as the client
// encodes them; N=256 in the environment for the chunks of an enqueueMany
// with `atomic: false`) on keys of its own in one fresh redis-server. The calls
// rotate, so this VM's changes of speed fall on every copy alike; a copy's
// figure is the script's time (INFO commandstats) per run, median over the
// rounds, and the difference between two copies is what the stage between
// them costs. Usage: node store-anatomy.mjs [rounds=110] [flushEvery=10]
// (the first 10 rounds are warm-up; the keys are emptied every flushEvery
// rounds: the hash and the list cost more per run as they grow).
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRun } from './bench-run.mjs';

const rounds = Number(process.argv[2] ?? 110);
const flushEvery = Number(process.argv[3] ?? 10);
const lib = fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { LUA_SOURCES } = await import(join(lib, 'backend/redis/scripts/lua-sources.generated.js'));
const { encodeStore } = await import(join(lib, 'backend/redis/scripts/enqueue-args.js'));
const { newRunId } = await import(join(lib, 'codec/run-id.js'));

const N = Number(process.env.N ?? 1000);
const script = LUA_SOURCES.enqueue;
/** The script up to (not including) `marker`, then `return 1`. */
const upTo = (marker) => {
  const at = script.indexOf(marker);
  if (at < 0) throw new Error(`enqueue.lua no longer holds ${JSON.stringify(marker)}: update this tool`);
  return `${script.slice(0, at)}\nreturn 1\n`;
};
const stages = [
  ['the argument alone', upTo('local PRIORITY_SPAN')],
  ['+ split into runs', upTo('-- Per option set:')],
  ['+ scores and records', upTo("inChunks('HSET', freshKey, records)")],
  ['+ HSET of the records', upTo('local wakeBroker = anyDeferred')],
  ['+ RPUSH into the ready list, counters', script],
];

const server = await RedisServer.start();
const redis = new Redis(server.url);
const shas = await Promise.all(stages.map(([, source]) => redis.script('LOAD', source)));
const costs = stages.map(() => []);
for (let round = 0; round < rounds; round++) {
  if (round % flushEvery === 0) await redis.flushall();
  for (let turn = 0; turn < stages.length; turn++) {
    const s = (turn + round) % stages.length;
    const runs = Array.from({ length: N }, (_, i) => benchRun(newRunId, round * N + i));
    // Each copy has its keys (one hash tag, as the backend's): seq, broker
    // wake, run prefix, fresh, leases, queue and inbox prefixes, then the
    // queue's ready, deferred, wake, stats, metrics prefix, running, idle,
    // ready list.
    const tag = `{s${s}}`;
    const names = ['seq', 'wake', 'run:', 'fresh', 'leases', 'q:', 'inbox:'];
    const queueKeys = ['ready', 'deferred', 'qwake', 'stats', 'metrics:', 'running', 'idle', 'ready-list'];
    const keys = [...names, ...queueKeys].map((name) => tag + name);
    const args = encodeStore(['bench'], runs, () => 1);
    await redis.config('RESETSTAT');
    await redis.evalsha(shas[s], keys.length, ...keys, ...args);
    const stats = await redis.info('commandstats');
    if (round >= 10) costs[s].push(Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(stats)[1]));
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
let previous = 0;
for (let s = 0; s < stages.length; s++) {
  const perRun = median(costs[s]) / N;
  console.log(
    `${stages[s][0].padEnd(40)} ${perRun.toFixed(2)} µs per run` +
      (s > 0 ? ` (stage ${(perRun - previous).toFixed(2)})` : ''),
  );
  previous = perRun;
}
await redis.quit();
await server.stop();
