/**
 * The scale suite's cases that an older tool of `benchmarks/tools/` already
 * measures: the suite runs the tool at each size (a process of its own, a
 * fresh Redis per measurement) and turns what it prints into rows.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ScaleCase, ScaleRow } from './scale-case.js';

/** Runs `tools/<tool>.js args` to its end; resolves with its stdout and stderr, rejects when it fails. */
async function runTool(tool: string, args: readonly (string | number)[]): Promise<{ stdout: string; stderr: string }> {
  const path = fileURLToPath(new URL(`../tools/${tool}.js`, import.meta.url));
  const child = spawn(process.execPath, [path, ...args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`tools/${tool}.js ${args.join(' ')} exited ${code}:\n${stderr.slice(-2_000)}`);
  return { stdout, stderr };
}

/** Runs drained by the queues case at each size: 20,000 as issue 45 measured, 1,000 in the smoke. */
const drainedRuns = () => (process.env['SCALE_SMOKE'] === '1' ? 1_000 : 20_000);

/** Queues consumed by one worker (issue 45: 1 → 100): `tools/queues-drain.js`, one drain a size. */
export const queuesCase: ScaleCase = {
  name: 'queues',
  base: 1,
  smokeBase: 1,
  unit: 'queues consumed by one worker',
  async measure(size) {
    const runs = drainedRuns();
    const { stdout } = await runTool('queues-drain', [runs, 100, size, 1]);
    const match = /^\d+ queues: (\d+) runs\/s, Redis ([\d.]+) µs\/run, worker RSS (\d+) MB$/m.exec(stdout);
    if (!match) throw new Error(`tools/queues-drain.js printed no drain:\n${stdout}`);
    return [
      {
        size,
        operation: `drain of ${runs.toLocaleString('en-US')} runs spread evenly, concurrency 100 (per run; RSS: the worker)`,
        opsPerS: Number(match[1]),
        redisUsPerOp: Number(match[2]),
        rssMb: Number(match[3]),
      },
    ];
  },
};

/** One line of what `tools/schedules-scale.js` reports (its `Row`). */
interface SchedulesRow {
  readonly count: number;
  readonly rssMb: number | null;
  readonly peakRssMb: number;
  readonly planS: number;
  readonly redisCpuS: number;
  readonly probeLateMs: number;
  readonly declareMs: number;
  readonly redisBytesPerSchedule: number;
  readonly died: string | null;
}

/** Schedules (issue 45: 1k → 100k): `tools/schedules-scale.js`, a real pool's supervisor planning them. */
export const schedulesCase: ScaleCase = {
  name: 'schedules',
  base: 1_000,
  smokeBase: 100,
  unit: 'schedules',
  async measure(size) {
    const { stderr } = await runTool('schedules-scale', [size]);
    const line = stderr.split('\n').find((l) => l.startsWith('{"count"'));
    if (!line) throw new Error(`tools/schedules-scale.js reported no row:\n${stderr.slice(-2_000)}`);
    const r = JSON.parse(line) as SchedulesRow;
    const rows: ScaleRow[] = [
      {
        size,
        operation:
          `broker plans every schedule (per schedule; the probe's slot late by ${Math.round(r.probeLateMs)} ms; ` +
          `RSS: the supervisor, ${Math.round(r.peakRssMb)} MB at peak${r.died ? `; died: ${r.died}` : ''})`,
        opsPerS: r.planS > 0 ? size / r.planS : undefined,
        redisUsPerOp: (r.redisCpuS * 1e6) / size,
        redisBytesPerItem: r.redisBytesPerSchedule,
        rssMb: r.rssMb ?? undefined,
      },
      { size, operation: 'one declaration of code schedules (per call)', p50Ms: r.declareMs, p99Ms: r.declareMs },
    ];
    return rows;
  },
};
