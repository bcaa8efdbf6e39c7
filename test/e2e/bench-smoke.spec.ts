import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';

const BENCH = fileURLToPath(new URL('../../dist/benchmarks/run-bench.js', import.meta.url));

describe('npm run bench (smoke)', () => {
  it('runs every system through every phase on a few hundred tasks', async () => {
    const child = spawn(process.execPath, [BENCH, '--smoke'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    child.stderr.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).toBe(0);
    // One row per system with a figure in every phase column; no speed is asserted.
    for (const system of ['Threadmill', 'BullMQ', 'bee-queue']) {
      expect(output).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│`));
    }
    expect(output).toMatch(/│ Threadmill, 2 processes\s+│ -\s+│ -\s+│ [\d,]+/);
    expect(output).toMatch(/Drain ≥ 3× bee-queue/);
  }, 180_000);
});
