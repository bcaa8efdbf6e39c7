import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';

const BENCH = fileURLToPath(new URL('../../dist/benchmarks/run-bench.js', import.meta.url));

describe('npm run bench (smoke)', () => {
  it('runs every system through every phase on a few hundred tasks, and the memory rows on a thousand runs and 30 flows', async () => {
    const { code, output } = await runBench(['--smoke']);
    expect(code, output).toBe(0);
    // The report names what it ran on: CPUs, memory, the Node of the bench and its workers (this one), Redis.
    expect(output).toMatch(/Measured on \d+ × .+, \d+ GiB, Node v[\d.]+, Redis \d/);
    expect(output).toContain(`Node ${process.version}, `);
    // One row per system with a figure in every phase column; no speed is asserted.
    for (const system of ['Threadmill', 'BullMQ', 'bee-queue']) {
      expect(output).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│`));
    }
    expect(output).toMatch(/│ Threadmill, 2 processes\s+│ -\s+│ -\s+│ [\d,]+/);
    expect(output).toMatch(/Drain ≥ 3× bee-queue/);
    // The memory row, on a thousand runs: bytes per pending run and per finished run, for each system at its defaults.
    expect(output).toMatch(/Redis memory per run \(bytes\)/);
    for (const system of ['Threadmill, defaults \\(concurrency 100\\)', 'BullMQ', 'bee-queue']) {
      expect(output).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│$`, 'm'));
    }
    // The I/O workload: throughput, p50 and p99 for the four systems it runs, and the ratios to the peers.
    expect(output).toContain('AOF off, I/O workload');
    const io = output.slice(output.indexOf('AOF off, I/O workload'));
    for (const system of ['Threadmill', 'Threadmill, defaults \\(concurrency 100\\)', 'BullMQ', 'bee-queue']) {
      expect(io).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d.,]+\\s+│ [\\d.,]+\\s+│\\n`));
    }
    expect(io).toMatch(/│ Threadmill vs bee-queue\s+│ [\d.]+×\s+│ [\d.]+×\s+│ [\d.]+×\s+│/);
    // The flow phase: flows of 1 parent + 10 children and as many plain runs, drained by Threadmill at its
    // defaults and by BullMQ (its FlowProducer); the ratio of the two, and what a flow edge costs Redis.
    expect(output).toContain('AOF off, flows');
    const flows = output.slice(output.indexOf('AOF off, flows'));
    for (const system of ['Threadmill, defaults \\(concurrency 100\\)', 'BullMQ']) {
      expect(flows).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│ [\\d.]+×\\s+│ [\\d.]+\\s+│`));
    }
    expect(flows).toMatch(/│ Threadmill, defaults \(concurrency 100\) vs BullMQ\s+│ [\d.]+×\s+│/);
    const flowMemory = output.slice(output.indexOf('Redis memory of flows'));
    for (const system of ['Threadmill, defaults \\(concurrency 100\\)', 'BullMQ']) {
      expect(flowMemory).toMatch(new RegExp(`│ ${system}\\s+│ [\\d,]+\\s+│ [\\d,]+\\s+│ -?[\\d.,]+\\s+│\\n`));
    }
    expect(output).toMatch(
      /Flows \(1 parent \+ 10 children\) drained ≥ 5× BullMQ’s FlowProducer, nodes\/s\s+│ [\d.]+×/,
    );
    expect(output).toMatch(/Flows drained ≥ 60% of the plain runs’ drain .*│ [\d.]+×/);
    expect(output).toMatch(
      /Redis memory per flow edge ≤ 64 B beyond the runs themselves\s+│ -?[\d.,]+ B \(BullMQ -?[\d.,]+ B\)/,
    );
  }, 180_000);

  it('refuses an unknown AOF mode, naming it and the modes it takes', async () => {
    const { code, output } = await runBench(['--aof', 'off,sometimes']);
    expect(code).toBe(1);
    expect(output).toMatch(/unknown AOF mode "sometimes": give a comma-separated list of off, everysec, always/);
  });

  it('refuses an unknown phase, naming it and the phases it takes', async () => {
    const { code, output } = await runBench(['--phases', 'flow,flows']);
    expect(code).toBe(1);
    expect(output).toMatch(/unknown phase "flows": give a comma-separated list of enqueue, bulk, drain, .*, flow/);
  });
});

/** Runs the built benchmark with `args`; resolves with its exit code and its output, colours stripped. */
async function runBench(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
  child.stderr.on('data', (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString())));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}
