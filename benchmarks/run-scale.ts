/**
 * The scale suite (issue 45): how each cost grows with what a deployment
 * holds. Each case measures, at 1×, 10× and 100× its size, per operation:
 * ops/s, Redis CPU (INFO cpu), latency p50/p99 of the calls, Redis memory
 * per item held (INFO memory) and the RSS of the process involved, each
 * measurement on a fresh redis-server (AOF off, a directory of its own).
 * Each measurement runs in a process of its own (this script again, with
 * SCALE_MEASURE=<case>:<size>), so a producer's RSS is its own, not what an
 * earlier case left in the heap. Prints a Markdown table per case;
 * docs/scale.md keeps them.
 *
 * Run: `npm run bench:scale -- [--sizes small|full] [--cases pending,dedupe,...]`.
 * `--sizes small` (the default) measures 1× only; `full` 1×, 10× and 100×.
 * `SCALE_SMOKE=1` makes each case's 1× smaller (1,000 runs), for the CI
 * smoke (test/e2e/scale-smoke.spec.ts).
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dedupeCase } from './scale/dedupe-case.js';
import { groupsCase } from './scale/groups-case.js';
import { pendingCase } from './scale/pending-case.js';
import type { ScaleCase, ScaleRow } from './scale/scale-case.js';
import { scaleTable } from './scale/scale-table.js';
import { queuesCase, schedulesCase } from './scale/tool-cases.js';
import { waitersCase } from './scale/waiters-case.js';

const CASES: readonly ScaleCase[] = [pendingCase, dedupeCase, groupsCase, waitersCase, queuesCase, schedulesCase];
const SIZES = { small: [1], full: [1, 10, 100] } as const;

/** The line a measuring process prints its rows on. */
const ROWS = 'SCALE_ROWS ';

function fail(message: string): never {
  console.error(`bench:scale: ${message}`);
  process.exit(1);
}

const measuring = process.env['SCALE_MEASURE'];
if (measuring) {
  const [name, size] = measuring.split(':');
  const rows = await CASES.find((c) => c.name === name)!.measure(Number(size));
  console.log(ROWS + JSON.stringify(rows));
  process.exit(0);
}

/** Measures `scaleCase` at `size` in a fresh process; its stderr passes through. */
async function measureApart(scaleCase: ScaleCase, size: number): Promise<ScaleRow[]> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, SCALE_MEASURE: `${scaleCase.name}:${size}` },
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = stdout.split('\n').find((l) => l.startsWith(ROWS));
  if (code !== 0 || !line) fail(`the ${scaleCase.name} case at ${size} failed (exit ${code}):\n${stdout}`);
  return JSON.parse(line.slice(ROWS.length)) as ScaleRow[];
}

const { values } = parseArgs({
  options: { sizes: { type: 'string', default: 'small' }, cases: { type: 'string' } },
});
const multiples = SIZES[values.sizes as keyof typeof SIZES];
if (!multiples) fail(`unknown --sizes "${values.sizes}": give small (1× only) or full (1×, 10×, 100×).`);
const names = values.cases?.split(',').filter(Boolean) ?? CASES.map((c) => c.name);
const unknown = names.filter((name) => !CASES.some((c) => c.name === name));
if (unknown.length > 0) {
  fail(
    `unknown case "${unknown.join('", "')}": give a comma-separated list of ${CASES.map((c) => c.name).join(', ')}.`,
  );
}
const smoke = process.env['SCALE_SMOKE'] === '1';

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
console.log(`bench:scale --sizes ${values.sizes} --cases ${names.join(',')}${smoke ? ' (SCALE_SMOKE=1)' : ''}`);
console.log(`Node ${process.version}; load average at the start: ${load()}`);
for (const scaleCase of CASES.filter((c) => names.includes(c.name))) {
  const base = smoke ? scaleCase.smokeBase : scaleCase.base;
  const rows: ScaleRow[] = [];
  for (const multiple of multiples) {
    const size = base * multiple;
    const began = performance.now();
    rows.push(...(await measureApart(scaleCase, size)));
    const seconds = ((performance.now() - began) / 1_000).toFixed(1);
    console.error(`${scaleCase.name} at ${size.toLocaleString('en-US')}: ${seconds} s, load average ${load()}`);
  }
  console.log(`\n${scaleTable(scaleCase, rows)}\n`);
}
console.log(`load average at the end: ${load()}`);
process.exit(0);
