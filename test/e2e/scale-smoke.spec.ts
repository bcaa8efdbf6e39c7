import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCALE = fileURLToPath(new URL('../../dist/benchmarks/run-scale.js', import.meta.url));

/** A table row: the size, the operation, then six figures or `-` each; no speed is asserted. */
const ROW = /^\| [\d,]+ \| [^|]+ \|( (-|[\d,]+(\.\d+)?) \|){6}$/;

describe('npm run bench:scale (smoke)', () => {
  it('measures the pending, groups and waiters cases at their smoke size and prints a table each', async () => {
    const { code, output } = await runScale(['--sizes', 'small', '--cases', 'pending,groups,waiters']);
    expect(code, output).toBe(0);
    expect(output).toMatch(/load average at the start: [\d.]+, [\d.]+, [\d.]+/);
    for (const [name, rows] of [
      ['pending', 6],
      ['groups', 5],
      ['waiters', 3],
    ] as const) {
      const table = output
        .slice(output.indexOf(`### ${name} (size:`))
        .split('\n\n')[1]!
        .split('\n');
      expect(table[0]).toBe(
        '| size | operation | ops/s | Redis CPU (µs/op) | p50 (ms) | p99 (ms) | Redis bytes/item | RSS (MB) |',
      );
      expect(table.slice(2), output).toHaveLength(rows);
      for (const row of table.slice(2)) expect(row, output).toMatch(ROW);
    }
    // The figures a case promises are there: bytes per pending run, the waiters' producer RSS.
    expect(output).toMatch(
      /^\| 1,000 \| enqueueMany, calls of 1,000 \(per run\) \| [\d,]+ \| [\d.,]+ \| [\d.,]+ \| [\d.,]+ \| [\d,]+ \| - \|$/m,
    );
    expect(output).toMatch(
      /^\| 10 \| idle, every waiter waiting \(Redis CPU µs per second\) \| - \| [\d.,]+ \| - \| - \| - \| [\d,]+ \|$/m,
    );
  }, 60_000);

  it('refuses an unknown case, naming it and the cases it has', async () => {
    const { code, output } = await runScale(['--cases', 'pending,flows']);
    expect(code).toBe(1);
    expect(output).toMatch(
      /unknown case "flows": give a comma-separated list of pending, dedupe, groups, waiters, queues, schedules/,
    );
  });
});

/** Runs the built scale suite with `args` and SCALE_SMOKE=1; resolves with its exit code and its output. */
async function runScale(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [SCALE, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, SCALE_SMOKE: '1' },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}
