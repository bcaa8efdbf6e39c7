/**
 * Where the benchmark's bulk phase spends its time, call by call, for Threadmill.
 *
 * Run: `[FLUSH=always|never|alternate] [PIN=1] [CALLS=1] node dist/benchmarks/tools/bulk-calls.js [repetitions=3] [pipelined|atomic]`
 * after `npm run build`.
 *
 * Each repetition runs the two enqueue phases as `npm run bench` does
 * (20,000 single enqueues, 64 in flight, then 20 bulk calls of 1,000 with
 * `atomic: false`, or the atomic default with `atomic`) on an emptied Redis,
 * and prints the phase's runs/s with the medians, per bulk call, of its wall
 * time, the time Redis spent executing its script calls (SLOWLOG, which
 * times each command in microseconds, unlike INFO cpu's clock ticks) and the
 * producer's CPU, and the Redis page faults of the phase. CALLS=1 also
 * prints each call as wall/Redis/CPU/GC pause (ms). FLUSH decides whether the
 * one-by-one phase's runs are deleted before the bulk phase: `always` (as the
 * benchmark does), `never`, or `alternate` (even repetitions only, to compare
 * the two in one process). PIN=1 places Redis and this process on CPUs of
 * their own, as the benchmark does.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { enqueueOneByOne } from '../lib/phases.js';
import { threadmillProducer } from '../lib/producers.js';
import { median, pinFromEnv } from '../lib/tool-support.js';
import { payload } from '../workers/protocol.js';

const repetitions = Number(process.argv[2] ?? 3);
const atomicBulk = process.argv[3] === 'atomic';
const flush = process.env['FLUSH'] ?? 'always';
const n = 20_000;
const bulkSize = 1_000;

const server = await RedisServer.start();
const admin = new Redis(server.url);
await admin.config('SET', 'slowlog-log-slower-than', '0');
await admin.config('SET', 'slowlog-max-len', '1000');
const placement = pinFromEnv(server);
if (placement) console.log(placement.describe());
// Minor page faults of the Redis process: the 10th field of its stat, the 8th after its name.
const pageFaults = () => Number(readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[7]);
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

interface Call {
  readonly wall: number;
  readonly redis: number;
  readonly cpu: number;
  readonly gc: number;
}

for (let repetition = 1; repetition <= repetitions; repetition++) {
  await admin.flushall();
  const single = await threadmillProducer(server.url, 'bench-single');
  const main = await threadmillProducer(server.url, 'bench', { atomicBulk });
  await enqueueOneByOne(single, n, 64);
  const flushed = flush === 'always' || (flush === 'alternate' && repetition % 2 === 0);
  if (flushed) await admin.flushall();

  const calls: Call[] = [];
  const faultsBefore = pageFaults();
  const started = performance.now();
  for (let first = 0; first < n; first += bulkSize) {
    const data = Array.from({ length: bulkSize }, (_, i) => payload(first + i));
    await admin.slowlog('RESET');
    gcMs = 0;
    const callStarted = performance.now();
    const cpuBefore = process.cpuUsage();
    await main.enqueueBulk(data);
    const wall = performance.now() - callStarted;
    const cpu = process.cpuUsage(cpuBefore);
    const gc = gcMs;
    // Each entry: id, timestamp, duration (µs), arguments, ...
    const entries = (await admin.slowlog('GET', 1000)) as [number, number, number, string[]][];
    const redisUs = entries
      .filter((entry) => String(entry[3][0]).toLowerCase().startsWith('eval'))
      .reduce((sum, entry) => sum + Number(entry[2]), 0);
    calls.push({ wall, redis: redisUs / 1000, cpu: (cpu.user + cpu.system) / 1000, gc });
  }
  const seconds = (performance.now() - started) / 1000;
  const faults = pageFaults() - faultsBefore;
  const field = (key: keyof Call) => median(calls.map((call) => call[key])).toFixed(2);
  console.log(
    `repetition ${repetition}${flushed ? ' (flushed)' : ''}: ${Math.round(n / seconds).toLocaleString('en-US')} runs/s; ` +
      `per call: wall ${field('wall')} ms, Redis ${field('redis')} ms, producer CPU ${field('cpu')} ms; ` +
      `Redis page faults ${faults}`,
  );
  if (process.env['CALLS']) {
    const cells = calls.map(({ wall, redis, cpu, gc }) => [wall, redis, cpu, gc].map((v) => v.toFixed(1)).join('/'));
    console.log(`  wall/Redis/CPU/GC: ${cells.join(' ')}`);
  }
  await single.close();
  await main.close();
}
await admin.quit();
await server.stop();
