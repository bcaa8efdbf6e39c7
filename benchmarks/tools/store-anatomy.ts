/**
 * Where a bulk enqueue's Redis time goes: the enqueue script against copies of it that return after each of its stages.
 *
 * Run: `[N=1000] node dist/benchmarks/tools/store-anatomy.js [rounds=110] [flushEvery=10]` after `npm run build`
 * (the first 10 rounds are warm-up).
 *
 * Each copy is called with the same kind of batch (N new runs of the
 * benchmark's payload, as the client encodes them; N=128 for the chunks of an
 * `enqueueMany` with `atomic: false`) on keys of its own in one fresh
 * redis-server. The calls rotate, so the VM's changes of speed fall on every
 * copy alike; a copy's figure is the script's time (INFO commandstats) per
 * run, median over the rounds, and the difference between two copies is
 * what the stage between them costs. The keys are emptied every flushEvery
 * rounds: the hash and the list cost more per run as they grow.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { benchRun, commandUs, enqueueScript, libraryBuild, loadModule, median } from '../lib/tool-support.js';

const rounds = Number(process.argv[2] ?? 110);
const flushEvery = Number(process.argv[3] ?? 10);
const N = Number(process.env['N'] ?? 1000);
const lib = libraryBuild();
const enqueue = await enqueueScript(lib);
const { newRunId } = await loadModule(lib, 'codec/run-id.js');

// Each stage ends where the next begins, at a line of lua/enqueue.lua.
const stageEnds: [label: string, marker: string | undefined][] = [
  ['the argument alone', 'local PRIORITY_SPAN'],
  ['+ split into runs', '-- Per option set:'],
  ['+ scores and records', "inChunks('HSET', freshKey, records)"],
  ['+ HSET of the records', 'for q = 1, queueCount do'],
  ['+ RPUSH into the ready list, counters', undefined],
];
let from = 0;
const stages = stageEnds.map(([label, marker]): [string, string] => {
  if (marker === undefined) return [label, enqueue.source];
  const at = enqueue.source.indexOf(marker, from);
  if (at < 0)
    throw new Error(
      `enqueue.lua no longer holds ${JSON.stringify(marker)} after the previous stage: update this tool.`,
    );
  from = at + marker.length;
  return [label, `${enqueue.source.slice(0, at)}\nreturn 1\n`];
});

const server = await RedisServer.start();
const redis = new Redis(server.url);
const shas = await Promise.all(stages.map(([, source]) => redis.script('LOAD', source) as Promise<string>));
const costs: number[][] = stages.map(() => []);
for (let round = 0; round < rounds; round++) {
  if (round % flushEvery === 0) await redis.flushall();
  for (let turn = 0; turn < stages.length; turn++) {
    const s = (turn + round) % stages.length;
    const keys = enqueue.keys(`s${s}`);
    const args = enqueue.args(Array.from({ length: N }, (_, i) => benchRun(newRunId, round * N + i)));
    await redis.config('RESETSTAT');
    await redis.evalsha(shas[s]!, keys.length, ...keys, ...args);
    if (round >= 10) costs[s]!.push(await commandUs(redis));
  }
}
let previous = 0;
stages.forEach(([label], s) => {
  const perRun = median(costs[s]!) / N;
  const stage = s > 0 ? ` (stage ${(perRun - previous).toFixed(2)})` : '';
  console.log(`${label.padEnd(40)} ${perRun.toFixed(2)} µs per run${stage}`);
  previous = perRun;
});
await redis.quit();
await server.stop();
