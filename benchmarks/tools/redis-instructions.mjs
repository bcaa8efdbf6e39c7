#!/usr/bin/env node
// Redis instructions per run of the store, claim and acknowledge scripts,
// counted by valgrind's callgrind on a redis-server of its own. Unlike CPU
// time, the count does not move with the VM's speed: the same code and
// inputs give the same figure, so a before/after pair needs one run each.
// Usage: node redis-instructions.mjs [N=12000] [B=300] [S=1000]
// (B runs per claim and acknowledgement, S per store call)
// (LIB=<a built libs/threadmill/dist> measures another build, e.g. a worktree's;
// KEEP=1 keeps the callgrind dumps for callgrind_annotate and prints where;
// DELAY_MS=<ms> makes every run deferred by that long; IDLE=1 has an idle
// consumer blocked on the queue before each store call, see below;
// RESULT_TTL_MS=<ms> keeps results that long.)
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { benchRun } from './bench-run.mjs';

const [n = 12_000, batch = 300, storeBatch = 1000] = process.argv.slice(2).map(Number);
const lib = process.env.LIB ?? fileURLToPath(new URL('../../libs/threadmill/dist/', import.meta.url));
const { RedisConnections } = await import(join(lib, 'backend/redis/redis-connections.js'));
const { RedisTaskBackend } = await import(join(lib, 'backend/redis/redis.backend.js'));
const { newRunId } = await import(join(lib, 'codec/run-id.js'));

const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'tm-callgrind-'));
const out = join(dir, 'callgrind.out');
const valgrind = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    `--callgrind-out-file=${out}`,
    'redis-server',
    '--port',
    String(port),
    '--save',
    '',
    '--dir',
    dir,
  ],
  { stdio: 'ignore' },
);
// valgrind starts redis-server slowly: wait until it answers.
for (let up = false; !up;) {
  await delay(200);
  up =
    spawnSync('redis-cli', ['-p', String(port), 'ping'])
      .stdout?.toString()
      .trim() === 'PONG';
}
const connections = new RedisConnections(`redis://127.0.0.1:${port}`, 'bench', 60_000);
const backend = new RedisTaskBackend(connections, {
  alias: 'bench',
  leaseTtlMs: 600_000,
  // RESULT_TTL_MS=<ms> keeps results, as the module's default (24 h) does.
  resultTtlMs: Number(process.env.RESULT_TTL_MS ?? 0),
  batchSize: batch,
});

// Each phase is one callgrind dump: zeroed before, dumped after.
const phases = [];
const phase = async (label, work) => {
  execFileSync('callgrind_control', ['-z', String(valgrind.pid)], { stdio: 'ignore' });
  await work();
  execFileSync('callgrind_control', ['-d', label, String(valgrind.pid)], { stdio: 'ignore' });
  phases.push(label);
};
// DELAY_MS=<ms> stores deferred runs (the claim and acknowledgement then find none due).
const delayMs = Number(process.env.DELAY_MS ?? 0);
const run = (i) => ({ ...benchRun(newRunId, i), delayMs });
// IDLE=1: before each store call an idle consumer blocks on the queue with
// its claim of one run behind the wait, so every store call wakes it and its
// claim takes the call's first run; the wait and the claim count in the
// store's figure (the path a run enqueued into an idle pool takes).
const waiter = process.env.IDLE ? backend.claimWaiter(['bench'], 'h:1:0') : undefined;
const leased = [];
await connections.ready();
await phase('store', async () => {
  for (let i = 0; i < n; i += storeBatch) {
    const woken = waiter?.claim(1, 0, 10_000);
    if (woken) await delay(5);
    await backend.store(Array.from({ length: Math.min(storeBatch, n - i) }, (_, j) => run(i + j)));
    if (woken) leased.push(...(await woken));
  }
});
await waiter?.close();
await phase('claim', async () => {
  for (let i = 0; i < n; i += batch) leased.push(...(await backend.claim(['bench'], batch, '"h:1:0"', 0)));
});
await phase('acknowledge', async () => {
  for (let i = 0; i < leased.length; i += batch) {
    await backend.acknowledge(
      leased
        .slice(i, i + batch)
        .map((r) => ({ id: r.id, queue: r.queue, token: r.token, outcome: { kind: 'successful' } })),
    );
  }
});
await connections.close();
execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
await new Promise((resolve) => valgrind.once('exit', resolve));

const dumps = readdirSync(dir)
  .filter((f) => /^callgrind\.out\.\d+$/.test(f))
  .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
dumps.forEach((file, i) => {
  const total = Number(/^summary: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1]);
  console.log(`${phases[i].padEnd(12)} ${Math.round(total / n).toLocaleString('en-US')} instructions per run`);
});
if (process.env.KEEP) console.log(`callgrind dumps kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
