/**
 * Worker instructions per drained run, counted by valgrind's callgrind: the Node side of the drain.
 *
 * Run: `node dist/benchmarks/tools/drain-instructions.js [N=20000] [samples=3] [concurrency=200]` after
 * `npm run build` (needs valgrind, with callgrind_control).
 *
 * Starts one benchmark worker process (the tuned settings: prefetch 1000,
 * batch 300, no results kept) under callgrind on a fresh redis-server, and
 * lets it drain N no-op runs to warm up (boot and the JIT's first compiles
 * vary by hundreds of millions of instructions from one process to the
 * next). Then, `samples` times: zeroes the worker's counts
 * (`callgrind_control -z`), enqueues N runs (calls of 1,000), waits until
 * the worker ran them all, dumps its counts and prints the instructions it
 * executed per run, every thread counted. Unlike CPU time, the count hardly
 * moves with the machine's load (another process's work is not counted), so
 * a before/after pair needs no quiet machine; what the worker does on timers
 * (lease renewals, progress reports) still counts per second of the
 * slowed-down drain. To measure another commit, copy the built tool into
 * that worktree's dist/benchmarks/tools and run it there: the producer and
 * the worker are then that commit's.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { threadmillProducer } from '../lib/producers.js';
import { benchWorkerEnv, enqueueInBulk } from '../lib/tool-support.js';
import type { FromWorker } from '../workers/protocol.js';

const [n = 20_000, samples = 3, concurrency = 200] = process.argv.slice(2).map(Number);
const server = await RedisServer.start();
const dir = mkdtempSync(join(tmpdir(), 'tm-drain-cg-'));
const out = join(dir, 'callgrind.out');
const worker = fork(fileURLToPath(new URL('../workers/threadmill-worker.js', import.meta.url)), [], {
  execPath: 'valgrind',
  execArgv: [
    '--tool=callgrind',
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...(process.env['WORKER_FLAGS']?.split(' ') ?? []),
  ],
  env: benchWorkerEnv(server.url, concurrency),
  stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
});
let done = 0;
let ready!: () => void;
const booted = new Promise<void>((resolve) => (ready = resolve));
const waiters: Array<{ count: number; resolve: () => void }> = [];
worker.on('message', (m: FromWorker) => {
  if (m.type === 'ready') ready();
  if (m.type !== 'progress') return;
  done = m.count;
  for (const waiter of waiters.splice(0)) {
    if (done >= waiter.count) waiter.resolve();
    else waiters.push(waiter);
  }
});
await booted;
const producer = await threadmillProducer(server.url, 'bench');

/** Enqueues `n` runs and resolves once the worker ran them. */
async function drain(): Promise<void> {
  const ran = new Promise<void>((resolve) => waiters.push({ count: done + n, resolve }));
  await enqueueInBulk(producer, n);
  await ran;
}

await drain();
for (let i = 1; i <= samples; i++) {
  execFileSync('callgrind_control', ['-z', String(worker.pid)], { stdio: 'ignore' });
  await drain();
  execFileSync('callgrind_control', ['-d', String(worker.pid)], { stdio: 'ignore' });
  const dump = readFileSync(`${out}.${i}`, 'utf8');
  const totals = /^(?:totals|summary): (\d+)/m.exec(dump);
  if (!totals) throw new Error(`no totals in ${out}.${i}`);
  console.log(`${n} runs: ${Math.round(Number(totals[1]) / n).toLocaleString('en')} instructions per drained run`);
}
await producer.close();
const exited = new Promise((resolve) => worker.once('exit', resolve));
worker.kill('SIGTERM');
await exited;
await server.stop();
rmSync(dir, { recursive: true, force: true });
