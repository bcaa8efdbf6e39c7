/**
 * Redis instructions per run of the store, claim and acknowledge scripts, counted by valgrind's callgrind.
 *
 * Run: `node dist/benchmarks/tools/redis-instructions.js [N=12000] [B=300] [S=1000]` after `npm run build`
 * (B runs per claim and acknowledgement, S per store call; needs valgrind).
 *
 * Unlike CPU time, the count does not move with the VM's speed: the same
 * code and inputs give the same figure, so a before/after pair needs one run
 * each. The environment adds:
 * - `LIB=<a built libs/threadmill/dist>` measures another build (another
 *   commit's, say: see the log's "measured with" cells);
 * - `KEEP=1` keeps the callgrind dumps for `callgrind_annotate` and prints where;
 * - `DELAY_MS=<ms>` makes every run deferred by that long;
 * - `IDLE=1` has an idle consumer blocked on the queue before each store
 *   call (see below);
 * - `RESULT_TTL_MS=<ms>` keeps results that long, as the module's default
 *   (24 h) does;
 * - `QUEUES=<Q>` has every claim name Q queues (`bench`, `bench-1`, …, each
 *   claim starting where the last stopped), the runs stored round-robin into the
 *   first `FILLED=<F>` of them (all Q unless given).
 */
import { freePort } from '@threadmill/nestjs/testing';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { benchRun, libraryBuild, loadModule } from '../lib/tool-support.js';

const [n = 12_000, batch = 300, storeBatch = 1_000] = process.argv.slice(2).map(Number);
const lib = libraryBuild(process.env['LIB']);
const { RedisConnections } = await loadModule(lib, 'backend/redis/redis-connections.js');
const { RedisTaskBackend } = await loadModule(lib, 'backend/redis/redis.backend.js');
const { newRunId } = await loadModule(lib, 'codec/run-id.js');

// Not RedisServer: this server runs under valgrind, which also starts it slowly.
const port = await freePort();
const dir = mkdtempSync(join(tmpdir(), 'tm-callgrind-'));
const valgrind = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
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
valgrind.once('error', (error) => {
  console.error(`valgrind did not start (${error.message}): install it (apt-get install valgrind).`);
  process.exit(1);
});
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
  resultTtlMs: Number(process.env['RESULT_TTL_MS'] ?? 0),
  batchSize: batch,
});

// Each phase is one callgrind dump: zeroed before, dumped after.
const phases: string[] = [];
async function phase(label: string, work: () => Promise<void>): Promise<void> {
  execFileSync('callgrind_control', ['-z', String(valgrind.pid)], { stdio: 'ignore' });
  await work();
  execFileSync('callgrind_control', ['-d', label, String(valgrind.pid)], { stdio: 'ignore' });
  phases.push(label);
}
// DELAY_MS: the claim and acknowledgement then find no run due.
const delayMs = Number(process.env['DELAY_MS'] ?? 0);
const queues = Array.from({ length: Number(process.env['QUEUES'] ?? 1) }, (_, i) => (i === 0 ? 'bench' : `bench-${i}`));
const filled = Number(process.env['FILLED'] ?? queues.length);
const run = (i: number) => ({ ...benchRun(newRunId, i), delayMs, queue: queues[i % filled]! });
// IDLE=1: before each store call an idle consumer blocks on the queue with
// its claim of one run behind the wait, so every store call wakes it and its
// claim takes the call's first run; the wait and the claim count in the
// store's figure (the path a run enqueued into an idle pool takes).
const waiter = process.env['IDLE'] ? backend.claimWaiter(['bench'], 'h:1:0') : undefined;
const leased: { id: string; queue: string; token: string }[] = [];
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
  // The worker id quoted, as this tool has always passed it (the backend
  // quotes it again): its claim figures stay comparable with the log's.
  // Each claim starts where the last stopped, as a consumer's do (a build
  // from before claims said where, `LIB=`, rotates by one a claim).
  for (let i = 0, offset = 0; i < n; i += batch) {
    const runs = await backend.claim(queues, batch, '"h:1:0"', offset);
    offset = runs.next ?? offset + 1;
    leased.push(...runs);
  }
});
await phase('acknowledge', async () => {
  for (let i = 0; i < leased.length; i += batch) {
    await backend.acknowledge(
      leased
        .slice(i, i + batch)
        .map(({ id, queue, token }) => ({ id, queue, token, outcome: { kind: 'successful', returnValue: undefined } })),
    );
  }
});
await connections.close();
execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
await new Promise((done) => valgrind.once('exit', done));

const dumps = readdirSync(dir)
  .filter((file) => /^callgrind\.out\.\d+$/.test(file))
  .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
dumps.forEach((file, i) => {
  const total = Number(/^summary: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1]);
  console.log(`${phases[i]!.padEnd(12)} ${Math.round(total / n).toLocaleString('en-US')} instructions per run`);
});
if (process.env['KEEP']) console.log(`callgrind dumps kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
