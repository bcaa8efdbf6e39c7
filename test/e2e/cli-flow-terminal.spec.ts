import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { TerminalProcess } from '../support/terminal.js';

const BIN = fileURLToPath(new URL('../../libs/threadmill-cli/bin/threadmill.js', import.meta.url));
const add = (a: number, b: number, after?: string[]) =>
  ({ task: 'MathService.add', args: [a, b], ...(after ? { after } : {}) }) as const;

/** Runs the real command without a terminal; resolves with its exit code and output. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out, err })));
}

describe('threadmill flow, the real command', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("prints a diamond's nodes in dependency order within an 80-column terminal, and exits 0", async () => {
    const alias = uniqueAlias('term');
    const harness = await Harness.start({ options: { alias } });
    cleanups.push(() => harness.close());
    const flow = await harness.queue.enqueueFlow({
      nodes: { a: add(1, 1), b: add(2, 2, ['a']), c: add(3, 3, ['a']), d: add(4, 4, ['b', 'c']) },
    });

    const terminal = TerminalProcess.spawn(
      process.execPath,
      [BIN, 'flow', flow.id, '--redis', redisUrl(), '--alias', alias],
      {
        cols: 80,
        rows: 24,
      },
    );
    cleanups.push(() => terminal.kill());
    expect(await terminal.exit(30_000)).toEqual({ exitCode: 0, signal: undefined });
    const screen = await terminal.screen();
    expect(screen).toContain(`Flow ${flow.id} · RUNNING`);
    expect(screen).toContain('4 nodes · 4 edges · 1 ready · 3 waiting');
    const rows = screen.split('\n').filter((line) => /^\d +[a-d] /.test(line));
    expect(rows.map((row) => row.split(/ +/).slice(0, 3).join(' '))).toEqual([
      '0 a READY',
      ...['b', 'c'].sort((x, y) => (flow.nodes[x]! < flow.nodes[y]! ? -1 : 1)).map((name) => `1 ${name} WAITING`),
      '2 d WAITING',
    ]);
    // Each line cut to the terminal's width: none ran on into the next row.
    expect((await terminal.rows()).filter((row) => row.wrapped)).toEqual([]);
  });

  it('lists flow in the help, and exits 1 with one line for an unknown flow, 2 for a bad alias', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    expect(top.out).toMatch(/flow \[options\] <id>/);
    const help = await cli(['flow', '--help']);
    expect(help.out).toMatch(/--json[^]*print the flow as JSON/);
    expect(help.out).toMatch(/--alias <name>[^]*env:\s+THREADMILL_ALIAS/);

    const alias = uniqueAlias('term');
    const unknown = await cli(['flow', 'no-such-flow', '--alias', alias], { REDIS_URL: redisUrl() });
    expect(unknown).toMatchObject({ code: 1, out: '' });
    expect(unknown.err.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^threadmill flow: no flow "no-such-flow" on alias "${alias}"`)),
    ]);
    const bad = await cli(['flow', 'some-flow', '--alias', 'no spaces']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--alias must be 1-64 letters/);
  });
});
