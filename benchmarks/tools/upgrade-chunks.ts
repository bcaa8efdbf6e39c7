/**
 * How long an upgrade of the storage layout holds Redis: a layout-1 keyspace of N kept successes (in two queues'
 * successful sets) and N/10 leases is taken to this checkout's layout by an application's boot; its `upgrade.lua` calls from SLOWLOG (those of 1 ms or more: Redis 7 logs the commands a script calls too), longest,
 * median, total, and the wall time. With `single`, the one-call script of git revision `rev` (default `main`,
 * before issue 45) instead.
 *
 * Run: `node dist/benchmarks/tools/upgrade-chunks.js [N=100000] [chunked|single] [rev=main]` after `npm run build`.
 */
import { execFileSync } from 'node:child_process';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ThreadmillModule } from '@threadmill/nestjs';

const n = Number(process.argv[2] ?? 100_000);
const mode = process.argv[3] ?? 'chunked';
const rev = process.argv[4] ?? 'main';
const prefix = 'threadmill:{bench}:';

const server = await RedisServer.start();
const admin = new Redis(server.url);
const finishedAt = Date.now() - 60_000;
for (let from = 0; from < n; from += 1000) {
  const queue = from < n * 0.8 ? 'a' : 'b';
  const entries = Array.from({ length: Math.min(1000, n - from) }, (_, i) => [finishedAt + from + i, `s-${from + i}`]);
  await admin.zadd(`${prefix}q:${queue}:successful`, ...entries.flat());
}
const pipeline = admin.pipeline();
for (let i = 0; i < n / 10; i++) {
  pipeline.hset(`${prefix}leases`, `l-${i}`, `${1000 + i}|${finishedAt}|1|0|"host:1:0"`);
  if (i % 3 === 0) pipeline.hset(`${prefix}run:l-${i}`, 'queue', 'a', 'startedToken', String(1000 + i));
}
await pipeline.exec();
await admin.sadd(`${prefix}queues`, 'a');
await admin.set(`${prefix}seq`, String(n));
console.log(`layout 1: ${n} kept successes and ${n / 10} leases`);

await admin.config('SET', 'slowlog-log-slower-than', '1000');
await admin.config('SET', 'slowlog-max-len', '100000');
await admin.slowlog('RESET');
const began = Date.now();
if (mode === 'single') {
  const lua = execFileSync('git', ['show', `${rev}:lua/upgrade.lua`], { encoding: 'utf8' });
  const keys = ['layout', 'leases', 'run:', 'queues', 'q:', 'seq'].map((name) => prefix + name);
  // main's layout, the one its script brings keys to.
  await admin.eval(lua, keys.length, ...keys, 4);
} else {
  @Module({ imports: [ThreadmillModule.forRoot({ connection: server.url, alias: 'bench', queues: ['a'] })] })
  class UpgradeBenchModule {}
  const app = await NestFactory.createApplicationContext(UpgradeBenchModule, { logger: ['error'] });
  await app.close();
}
const wall = Date.now() - began;
const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
// The upgrade's calls alone (a boot runs other scripts too): those given the `upgrade` key.
const scripts = log
  .filter(([, , , args]) => /^(evalsha|eval)$/i.test(args[0] ?? '') && args.includes(`${prefix}layout`))
  .map((entry) => entry[2] / 1000);
const sorted = [...scripts].sort((a, b) => a - b);
console.log(
  `${mode} upgrade to layout ${await admin.get(`${prefix}layout`)}: ${wall} ms wall; SLOWLOG (calls of 1 ms or ` +
    `more: ${scripts.length}): longest ${(sorted.at(-1) ?? 0).toFixed(2)} ms, median ` +
    `${(sorted[sorted.length >> 1] ?? 0).toFixed(2)}, total ${scripts.reduce((a, b) => a + b, 0).toFixed(0)} ms`,
);
admin.disconnect();
await server.stop();
