/**
 * How long a purge of N pending runs holds Redis: the longest single script call and the calls' total (from
 * SLOWLOG, every call logged), the purge's wall time, and the latency of a PING sent over and over on another
 * connection meanwhile (p50, p99, max). With `single`, the purge is the one-call script of git revision `rev`
 * (default `main`, before issue 45) instead of this checkout's chunks.
 *
 * Run: `node dist/benchmarks/tools/purge-chunks.js [N=100000] [chunked|single] [rev=main]` after `npm run build`.
 */
import { execFileSync } from 'node:child_process';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TaskBackend, TaskInspector, TaskQueue, ThreadmillModule } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';

const n = Number(process.argv[2] ?? 100_000);
const mode = process.argv[3] ?? 'chunked';
const rev = process.argv[4] ?? 'main';

/** `lua/<name>.lua` at `rev`, its includes expanded as scripts/build-lua.mjs does. */
function luaAt(name: string, seen = new Set<string>()): string {
  const source = execFileSync('git', ['show', `${rev}:lua/${name}.lua`], { encoding: 'utf8' });
  return source.replace(/^--- @include "([^"]+)"$/gm, (_, include: string) => {
    if (seen.has(include)) return '';
    seen.add(include);
    return luaAt(include, seen).trimEnd();
  });
}

const server = await RedisServer.start();
const admin = new Redis(server.url);
const pinger = new Redis(server.url);
@Module({ imports: [ThreadmillModule.forRoot({ connection: server.url, alias: 'bench', queues: ['bench'] })] })
class PurgeBenchModule {}
const app = await NestFactory.createApplicationContext(PurgeBenchModule, { logger: ['error'] });
const queue = app.get(TaskQueue);
const stored = Date.now();
for (let first = 0; first < n; first += 1000) {
  const items = Array.from({ length: Math.min(1000, n - first) }, (_, i) => ({
    task: 'bench.noop',
    queue: 'bench',
    args: [{ id: first + i, email: `user${first + i}@example.com` }],
  }));
  await queue.enqueueMany(items);
}
console.log(`${n} pending runs stored in ${Date.now() - stored} ms`);

await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', '1000000');
await admin.slowlog('RESET');
const pings: number[] = [];
const state = { purging: true };
const pinging = (async () => {
  while (state.purging) {
    const sent = process.hrtime.bigint();
    await pinger.ping();
    pings.push(Number(process.hrtime.bigint() - sent) / 1e6);
  }
})();
const began = Date.now();
let removed: number;
if (mode === 'single') {
  // The keys of this checkout's purge less its last (seq): the one-call script took the first 22.
  const backend = app.get(TaskBackend) as unknown as { scriptKeys: { purge(q: string, r: string): string[] } };
  const keys = backend.scriptKeys.purge('bench', 'threadmill:{bench}:last-call:bench-tool:0').slice(0, 22);
  removed = (await admin.eval(luaAt('purge'), keys.length, ...keys, 'bench-tool-call', 'bench')) as number;
} else {
  removed = await app.get(TaskInspector).purge('bench');
}
const wall = Date.now() - began;
state.purging = false;
await pinging;
const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
const scripts = log.filter((entry) => /^(evalsha|eval)$/i.test(entry[3][0] ?? '')).map((entry) => entry[2] / 1000);
pings.sort((a, b) => a - b);
const at = (q: number) => pings[Math.min(pings.length - 1, Math.floor(q * pings.length))]!.toFixed(2);
console.log(
  `${mode} purge of ${removed} runs: ${wall} ms wall, ${scripts.length} script calls, ` +
    `longest ${Math.max(...scripts).toFixed(2)} ms (median ${[...scripts].sort((a, b) => a - b)[scripts.length >> 1]!.toFixed(2)}), total ${scripts.reduce((a, b) => a + b, 0).toFixed(0)} ms; ` +
    `PING during it (${pings.length}): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${pings.at(-1)!.toFixed(2)} ms`,
);
await app.close();
admin.disconnect();
pinger.disconnect();
await server.stop();
