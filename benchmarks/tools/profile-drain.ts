/**
 * Drains N runs with the benchmark's Threadmill worker under a profiler: drain rate, CPU per run, top of the profile.
 *
 * Run: `node dist/benchmarks/tools/profile-drain.js [N=50000] [concurrency=100]` after `npm run build`.
 *
 * Fills a fresh redis-server with N no-op runs (calls of 1,000), then starts
 * one worker process (`--prefetch` 1000 unless BENCH_PREFETCH says
 * otherwise) and profiles it with `--cpu-prof`. Redis runs on CPU 0 and the
 * worker on CPU 1 (`taskset`; PIN=0 leaves them to the scheduler). The
 * environment adds:
 * - `PROF=0` runs the worker without the profiler (its overhead skews short
 *   drains); `PROF_INTERVAL=<µs>` sets its sampling interval (1000);
 * - `HEAP=1` samples the worker's allocations instead (`lib/heap-sampler`)
 *   and prints the bytes allocated per run; `HEAP=survivors` counts only
 *   what survived a scavenge (what makes scavenges slow and the old space
 *   grow);
 * - `TIMELINE=1` also prints the runs done against the ms since the first
 *   one (the worker reports every 10 ms);
 * - `WORKER_FLAGS` passes Node/V8 flags to the worker (`--no-opt`, `--trace-gc-nvp`);
 * - `WINDOW=<function>` narrows the profile's summary (`record`, the drain
 *   without boot and shutdown, by default; see `profile-summary`, which
 *   reads the profile this tool leaves in a temporary directory).
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  summariseCpuProfile,
  summariseHeapProfile,
  type CpuProfile,
  type HeapProfile,
} from '../lib/profile-summaries.js';
import { threadmillProducer } from '../lib/producers.js';
import { benchWorkerEnv, enqueueInBulk, redisCpuUs } from '../lib/tool-support.js';
import type { FromWorker } from '../workers/protocol.js';

const [n = 50_000, concurrency = 100] = process.argv.slice(2).map(Number);
const pin = process.env['PIN'] !== '0';
const server = await RedisServer.start();
if (pin) execFileSync('taskset', ['-p', '-c', '0', String(server.pid)]);
const producer = await threadmillProducer(server.url, 'bench');
await enqueueInBulk(producer, n);
await producer.close();

const dir = mkdtempSync(join(tmpdir(), 'tm-prof-'));
const heapProfile = join(dir, 'heap.json');
const flags = process.env['HEAP']
  ? ['--import', fileURLToPath(new URL('../lib/heap-sampler.js', import.meta.url))]
  : process.env['PROF'] !== '0'
    ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${process.env['PROF_INTERVAL'] ?? 1000}`]
    : [];
if (process.env['WORKER_FLAGS']) flags.push(...process.env['WORKER_FLAGS'].split(' '));
const worker = fork(fileURLToPath(new URL('../workers/threadmill-worker.js', import.meta.url)), [], {
  execPath: pin ? 'taskset' : process.execPath,
  execArgv: pin ? ['-c', '1', process.execPath, ...flags] : flags,
  env: { ...benchWorkerEnv(server.url, concurrency), HEAP_PROFILE: heapProfile },
  stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
});
const admin = new Redis(server.url);
const cpuBefore = await redisCpuUs(admin);
let first = 0;
await new Promise<void>((resolve) =>
  worker.on('message', (m: FromWorker) => {
    if (m.type !== 'progress') return;
    if (m.count > 0) {
      first ||= m.firstAt;
      if (process.env['TIMELINE']) console.log(`${(m.lastAt - first).toFixed(1).padStart(7)} ms ${m.count}`);
    }
    if (m.count < n) return;
    const wall = (m.lastAt - m.firstAt) / 1000;
    void redisCpuUs(admin).then((cpuAfter) => {
      const used = (cpuAfter - cpuBefore) / 1e6;
      worker.once('message', (stats: Extract<FromWorker, { type: 'stats' }>) => {
        console.log(
          `drained ${n} in ${(wall * 1000).toFixed(0)} ms: ${Math.round(n / wall)} tasks/s; ` +
            `Redis CPU ${((used / n) * 1e6).toFixed(1)} µs/task, ${((used / wall) * 100).toFixed(0)}% busy; ` +
            `worker CPU ${(stats.cpuUs / n).toFixed(1)} µs/task`,
        );
        admin.disconnect();
        resolve();
      });
      worker.send({ cmd: 'stats' });
    });
  }),
);
worker.kill('SIGTERM');
await new Promise((resolve) => worker.once('exit', resolve));
await server.stop();
if (process.env['HEAP']) {
  const profile = JSON.parse(readFileSync(heapProfile, 'utf8')) as HeapProfile;
  console.log(summariseHeapProfile(profile, n, 25, process.env['HEAP'] === 'survivors'));
}
const cpuProfile = readdirSync(dir).find((file) => file.endsWith('.cpuprofile'));
if (cpuProfile) {
  const profile = JSON.parse(readFileSync(join(dir, cpuProfile), 'utf8')) as CpuProfile;
  console.log(summariseCpuProfile(profile, 35, process.env['WINDOW'] ?? 'record'));
  console.log(`\nThe profile stays in ${join(dir, cpuProfile)} (for profile-summary, or Chrome's DevTools).`);
}
