#!/usr/bin/env node
// Fills a fresh redis-server with N no-op runs, then drains them with the
// benchmark's Threadmill worker under --cpu-prof. Prints the drain rate and
// the top of the profile. Usage: node profile-drain.mjs [N] [concurrency]
// TIMELINE=1 also prints the runs done against the ms since the first one
// (the worker reports every 10 ms); WORKER_FLAGS passes Node/V8 flags to the
// worker (e.g. WORKER_FLAGS=--no-opt).
import { RedisServer } from '@threadmill/nestjs/testing';
import { fork, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [n = 50_000, concurrency = 100] = process.argv.slice(2).map(Number);
const dist = fileURLToPath(new URL('../../dist/benchmarks/', import.meta.url));
const { threadmillProducer } = await import(join(dist, 'lib/producers.js'));
const { payload } = await import(join(dist, 'workers/protocol.js'));
// Pinned: Redis on CPU 0, the worker on CPU 1 (PIN=0 to leave scheduling to the OS).
const pin = process.env.PIN !== '0';
const server = await RedisServer.start();
if (pin) execFileSync('taskset', ['-p', '-c', '0', String(server.pid)]);
const producer = await threadmillProducer(server.url, 'bench');
for (let i = 0; i < n; i += 1000) await producer.enqueueBulk(Array.from({ length: 1000 }, (_, j) => payload(i + j)));
await producer.close();
const dir = mkdtempSync(join(tmpdir(), 'tm-prof-'));
// PROF=0 runs the worker without the profiler (its overhead skews short drains);
// PROF_INTERVAL sets its sampling interval in µs (default 1000).
// HEAP=1 samples the worker's allocations instead (heap-sampler.mjs) and
// prints the bytes allocated per run; HEAP=survivors counts only what
// survived a scavenge (what makes scavenges slow and the old space grow).
const heapProfile = join(dir, 'heap.json');
const prof = process.env.HEAP
  ? ['--import', fileURLToPath(new URL('heap-sampler.mjs', import.meta.url))]
  : process.env.PROF !== '0'
    ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${process.env.PROF_INTERVAL ?? 1000}`]
    : [];
if (process.env.WORKER_FLAGS) prof.push(...process.env.WORKER_FLAGS.split(' '));
const child = fork(join(dist, 'workers/threadmill-worker.js'), [], {
  execPath: pin ? 'taskset' : process.execPath,
  execArgv: pin ? ['-c', '1', process.execPath, ...prof] : prof,
  env: {
    ...process.env,
    REDIS_URL: server.url,
    BENCH_QUEUE: 'bench',
    BENCH_CONCURRENCY: String(concurrency),
    THREADMILL_POOL_SLOT: '0',
    HEAP_PROFILE: heapProfile,
  },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const { Redis } = await import('ioredis');
const admin = new Redis(server.url);
const cpu = async () => {
  const info = await admin.info('cpu');
  const f = (k) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)[1]);
  return f('used_cpu_user') + f('used_cpu_sys');
};
const cpuBefore = await cpu();
let first = 0;
await new Promise((resolve) =>
  child.on('message', (m) => {
    if (m.type === 'progress' && m.count > 0) {
      first ||= m.firstAt;
      if (process.env.TIMELINE) console.log(`${(m.lastAt - first).toFixed(1).padStart(7)} ms ${m.count}`);
    }
    if (m.type === 'progress' && m.count >= n) {
      const wall = (m.lastAt - m.firstAt) / 1000;
      cpu().then((after) => {
        const used = after - cpuBefore;
        child.once('message', (stats) => {
          console.log(
            `drained ${n} in ${(wall * 1000).toFixed(0)} ms: ${Math.round(n / wall)} tasks/s; Redis CPU ${((used / n) * 1e6).toFixed(1)} µs/task, ${((used / wall) * 100).toFixed(0)}% busy; worker CPU ${(stats.cpuUs / n).toFixed(1)} µs/task`,
          );
          admin.disconnect();
          resolve();
        });
        child.send({ cmd: 'stats' });
      });
    }
  }),
);
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
await server.stop();
if (process.env.HEAP)
  console.log(
    execFileSync(process.execPath, [
      fileURLToPath(new URL('heap-summary.mjs', import.meta.url)),
      heapProfile,
      String(n),
    ]).toString(),
  );
const [profile] = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
if (profile)
  console.log(
    execFileSync(
      process.execPath,
      [fileURLToPath(new URL('profile-summary.mjs', import.meta.url)), join(dir, profile), '35'],
      { env: { WINDOW: 'record', ...process.env } },
    ).toString(),
  );
