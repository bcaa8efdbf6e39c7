/**
 * Redis instructions per node of flows (1 parent + C children) through the
 * store, claim and acknowledge scripts, counted by valgrind's callgrind, beside
 * as many plain runs: the flow phase's drain (`npm run bench`, flows) in a
 * figure that does not move with the VM's load.
 *
 * Run: `node dist/benchmarks/tools/flow-instructions.js [F=2000] [C=10] [B=300]` after `npm run build`
 * (F flows; B runs per claim and acknowledgement; needs valgrind). The flows
 * are stored one call each (as `enqueueFlow` does), the plain runs in calls of
 * as many runs as a flow has. The drain goes in rounds: claims of B runs
 * until none is ready, then acknowledgements of B runs until all claimed are
 * settled; a flow's parent, readied by its children's acknowledgements, is
 * claimed in the next round. Each round's claims and acknowledgements are a
 * callgrind dump each (a dump per call would count the idle server between
 * calls many times over), summed per phase.
 * The environment adds:
 * - `RESULT_TTL_MS=<ms>` keeps results that long (the module's default, 24 h,
 *   is what the flow phase's worker runs with);
 * - `KEEP=1` keeps the callgrind dumps for `callgrind_annotate` and prints where;
 * - `LIB=<a built libs/threadmill/dist>` measures another build.
 */
import { freePort } from '@threadmill/nestjs/testing';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { benchRun, libraryBuild, loadModule } from '../lib/tool-support.js';

const [flows = 2_000, children = 10, batch = 300] = process.argv.slice(2).map(Number);
const nodes = flows * (children + 1);
const lib = libraryBuild(process.env['LIB']);
const { RedisConnections } = await loadModule(lib, 'backend/redis/redis-connections.js');
const { RedisTaskBackend } = await loadModule(lib, 'backend/redis/redis.backend.js');
const { newRunId } = await loadModule(lib, 'codec/run-id.js');

// Not RedisServer: this server runs under valgrind, which also starts it slowly.
const port = await freePort();
const dir = mkdtempSync(join(tmpdir(), 'tm-flow-callgrind-'));
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

/** The label of each callgrind dump, in the order they were made. */
const dumps: string[] = [];
async function measured(label: string, work: () => Promise<void>): Promise<void> {
  execFileSync('callgrind_control', ['-z', String(valgrind.pid)], { stdio: 'ignore' });
  await work();
  execFileSync('callgrind_control', ['-d', `${label}-${dumps.length}`, String(valgrind.pid)], { stdio: 'ignore' });
  dumps.push(label);
}

/** Stores `flows` flows (or as many plain runs, in calls of a flow's size), then claims and acknowledges until all ran. */
async function measure(kind: 'flow' | 'plain'): Promise<void> {
  await connections.client.flushall();
  await measured(`${kind} store`, async () => {
    for (let f = 0; f < flows; f++) {
      const first = f * (children + 1);
      const runs = Array.from({ length: children + 1 }, (_, i) => benchRun(newRunId, first + i));
      if (kind === 'plain') {
        await backend.store(runs);
        continue;
      }
      const [parent, ...kids] = runs;
      await backend.flows.store({
        id: newRunId(),
        nodes: [
          ...kids.map((run, i) => ({ run, name: `c${i}`, after: [] })),
          { run: parent!, name: 'parent', after: kids.map((run) => ({ id: run.id, onFailure: 'fail' as const })) },
        ],
      });
    }
  });
  // Rounds of: claim until nothing is ready, then acknowledge all that was
  // claimed (a flow's parent is ready in the round after its children's).
  for (let ran = 0, offset = 0; ran < nodes;) {
    const leased: { id: string; queue: string; token: string }[] = [];
    await measured(`${kind} claim`, async () => {
      for (;;) {
        const runs = await backend.claim(['bench'], batch, '"h:1:0"', offset);
        offset = runs.next ?? offset + 1;
        if (runs.length === 0) break;
        leased.push(...runs);
      }
    });
    if (leased.length === 0) throw new Error(`${kind}: ${nodes - ran} nodes never became ready`);
    await measured(`${kind} acknowledge`, async () => {
      for (let i = 0; i < leased.length; i += batch) {
        await backend.acknowledge(
          leased.slice(i, i + batch).map(({ id, queue, token }) => ({
            id,
            queue,
            token,
            outcome: { kind: 'successful', returnValue: undefined },
          })),
        );
      }
    });
    ran += leased.length;
  }
}

await connections.ready();
await measure('flow');
await measure('plain');
await connections.close();
execFileSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
await new Promise((done) => valgrind.once('exit', done));

const files = readdirSync(dir)
  .filter((file) => /^callgrind\.out\.\d+$/.test(file))
  .sort((a, b) => Number(a.split('.').pop()) - Number(b.split('.').pop()));
const totals = new Map<string, number>();
files.forEach((file, i) => {
  const total = Number(/^summary: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))?.[1]);
  totals.set(dumps[i]!, (totals.get(dumps[i]!) ?? 0) + total);
});
console.log(`${flows} flows of 1 parent + ${children} children (${nodes} nodes), and ${nodes} plain runs:`);
for (const [label, total] of totals) {
  console.log(`${label.padEnd(18)} ${Math.round(total / nodes).toLocaleString('en-US')} instructions per run`);
}
if (process.env['KEEP']) console.log(`callgrind dumps kept in ${dir}`);
else rmSync(dir, { recursive: true, force: true });
