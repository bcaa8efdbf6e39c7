/**
 * What a string handed to a Lua script costs Redis by its length: a script that only returns, given 1 KB to 400 KB.
 *
 * Run: `node dist/benchmarks/tools/lua-string-cost.js [rounds=200]` after `npm run build`.
 *
 * EVALSHA of `return 1` with one argument of 1 KB to 400 KB, and the same
 * bytes as 8 or 115 arguments, its time from INFO commandstats, median of the
 * rounds; then 115 KB again with Lua's collector stopped. Redis's Lua hashes
 * every byte of every string it makes (to resist hash flooding; stock Lua
 * 5.1 samples at most 32 bytes), so each byte of an argument, and of each
 * string a script cuts or builds from it, costs about the same.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { commandUs, median } from '../lib/tool-support.js';

const rounds = Number(process.argv[2] ?? 200);
const server = await RedisServer.start();
const redis = new Redis(server.url);
const sha = (await redis.script('LOAD', 'return 1')) as string;
const variants: Record<string, string[]> = {};
for (const kb of [1, 8, 16, 32, 64, 115, 400]) variants[`one argument of ${kb} KB`] = ['x'.repeat(kb * 1000)];
variants['8 arguments of 14.4 KB'] = Array.from({ length: 8 }, () => 'y'.repeat(14_375));
variants['115 arguments of 1 KB'] = Array.from({ length: 115 }, () => 'z'.repeat(1_000));

/** The median time of one EVALSHA with `args`, µs. */
async function cost(args: string[]): Promise<number> {
  const costs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    await redis.config('RESETSTAT');
    await redis.evalsha(sha, 0, ...args);
    costs.push(await commandUs(redis));
  }
  return median(costs);
}

for (const [label, args] of Object.entries(variants)) {
  const bytes = args.reduce((sum, arg) => sum + arg.length, 0);
  const us = await cost(args);
  console.log(`${label.padEnd(26)} ${String(us).padStart(4)} µs  (${((us * 1000) / bytes).toFixed(2)} ns per byte)`);
}
await redis.eval("collectgarbage('stop') return 1", 0);
console.log(`115 KB, Lua's collector stopped: ${await cost(variants['one argument of 115 KB']!)} µs`);
await redis.quit();
await server.stop();
