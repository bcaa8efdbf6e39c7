import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MailService, SlowService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { TerminalProcess } from '../support/terminal.js';

const BIN = fileURLToPath(new URL('../../libs/threadmill-cli/bin/threadmill.js', import.meta.url));

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

/** The rows of `screen` wider than 80 columns (none can be in an 80-column terminal, which wraps them). */
const wide = (screen: string) => screen.split('\n').filter((line) => [...line].length > 80);

describe('threadmill inspect in a real 80×24 terminal (pseudo-terminal)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('shows the queues with their counts within 80 columns, switches tabs and quits on q', async () => {
    const alias = uniqueAlias('term');
    const harness = await Harness.start({ options: { alias } });
    cleanups.push(() => harness.close());
    await harness.queue.enqueue(SlowService, 'sleep', [10]);
    await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    await harness.queue.enqueueMany(Array.from({ length: 3 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    await harness.queue.enqueue(MailService, 'send', [{ to: 'ann@example.com', subject: 'Hi' }]);

    // CI=true, as on a CI runner: the inspector must still draw live in a real terminal.
    const terminal = TerminalProcess.spawn(
      process.execPath,
      [BIN, 'inspect', '--redis', redisUrl(), '--alias', alias],
      { cols: 80, rows: 24, env: { CI: 'true' } },
    );
    cleanups.push(() => terminal.kill());

    //                                              READY RUN DEFER SUCC FAIL QUAR
    const screen = await terminal.until(/▸ default\s+3\s+1\s+0\s+0\s+0\s+0\s/, 30_000);
    expect(screen).toMatch(/ {2}emails\s+1\s+0\s+0\s+0\s+0\s+0\s/);
    expect(screen).toMatch(/ {2}reports\s+0\s+0\s+0\s+0\s+0\s+0\s/);
    expect(screen).toContain(`Threadmill · 3 queues · 0 workers · ${alias}@`);
    const full = await terminal.until(/(MathService\.add\s+READY[^]*){3}/);
    expect(wide(full)).toEqual([]);
    // Nothing ran past the 80th column into the next row.
    expect((await terminal.rows()).filter((row) => row.wrapped)).toEqual([]);

    await terminal.keys('2');
    // The row and the footer under it may reach the terminal in two writes: wait for both.
    const running = await terminal.until(/▸ \S+ SlowService\.sleep\s+RUNNING\s+1 [^]*default · running: run 1 of 1/);
    expect(wide(running)).toEqual([]);
    expect((await terminal.rows()).filter((row) => row.wrapped)).toEqual([]);

    await terminal.keys('q');
    expect(await terminal.exit(10_000)).toEqual({ exitCode: 0, signal: undefined });
  });

  it('masks the password of --redis in its process arguments (ps) once it has started', async () => {
    const alias = uniqueAlias('term');
    const harness = await Harness.start({ options: { alias } });
    cleanups.push(() => harness.close());
    // The test's Redis has no password: its default user takes any.
    const withPassword = redisUrl().replace('redis://', 'redis://default:s3cret-pw@');
    const terminal = TerminalProcess.spawn(process.execPath, [
      BIN,
      'inspect',
      '--redis',
      withPassword,
      '--alias',
      alias,
    ]);
    cleanups.push(() => terminal.kill());
    await terminal.until(`Threadmill · 3 queues · 0 workers · ${alias}@`, 30_000);

    // What ps and any user of the machine read: the command line, NUL-separated.
    const commandLine = readFileSync(`/proc/${terminal.pid}/cmdline`, 'utf8').replace(/\0+/g, ' ').trim();
    expect(commandLine).not.toContain('s3cret-pw');
    expect(commandLine).toContain(
      `inspect --redis ${withPassword.replace('default:s3cret-pw', '***:***')} --alias ${alias}`,
    );
    expect(await terminal.screen()).not.toContain('s3cret-pw');
  });

  it('prints help for the command and for inspect, exiting 0', async () => {
    const top = await cli(['--help']);
    expect(top.code).toBe(0);
    expect(top.out).toMatch(/Usage: threadmill \[options\] \[command\]/);
    expect(top.out).toMatch(/inspect \[options\]/);

    const inspect = await cli(['inspect', '--help']);
    expect(inspect.code).toBe(0);
    expect(inspect.out).toMatch(/--redis <url>[^]*env:\s+REDIS_URL/);
    expect(inspect.out).toMatch(/--alias <name>[^]*env:\s+THREADMILL_ALIAS/);
    expect(inspect.out).toMatch(/--interval <ms>[^]*default: 2000/);
    expect(inspect.out).toMatch(/--result-ttl <ms>[^]*default:\s+86400000,\s+env:\s+THREADMILL_RESULT_TTL_MS/);
    expect(inspect.out).toMatch(
      /--memory-warning-ratio <ratio>[^]*default:\s+0\.8,\s+env:\s+THREADMILL_MEMORY_WARNING_RATIO/,
    );
    expect(inspect.out).toMatch(/prefer REDIS_URL/);
    expect(inspect.out).toMatch(
      /A Redis URL with a password is best given in REDIS_URL: any user of the machine\ncan read a process's arguments \(ps\), not its environment\./,
    );
  });

  it('exits 2 naming the flag on a bad flag', async () => {
    const interval = await cli(['inspect', '--interval', '10']);
    expect(interval.code).toBe(2);
    expect(interval.err).toMatch(/--interval must be an integer from 250 to 3600000 \(ms\), got "10"/);

    const ttl = await cli(['inspect', '--result-ttl', '1h']);
    expect(ttl.code).toBe(2);
    expect(ttl.err).toMatch(/--result-ttl must be an integer number of ms \(0 or more\), got "1h"/);
    const ratio = await cli(['inspect'], { THREADMILL_MEMORY_WARNING_RATIO: '80' });
    expect(ratio.code).toBe(2);
    expect(ratio.err).toMatch(/--memory-warning-ratio must be a number from 0\.01 to 1, got "80"/);

    const unknown = await cli(['inspect', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown option '--bogus'/);

    const redis = await cli(['inspect', '--redis', 'http://localhost:6379']);
    expect(redis.code).toBe(2);
    expect(redis.err).toMatch(/--redis must be a redis:\/\/, rediss:\/\/ or unix:\/\/ URL/);

    // A password never shows, whether the URL came from the flag or from REDIS_URL.
    const flag = await cli(['inspect', '--redis', 'http://:s3cret-pw@localhost:6379']);
    expect(flag.code).toBe(2);
    expect(flag.err).toMatch(
      /^error: --redis must be a redis:\/\/, rediss:\/\/ or unix:\/\/ URL, got "http:\/\/:\*\*\*@localhost:6379"\.\n/,
    );
    const env = await cli(['inspect'], { REDIS_URL: 'http://ops:s3cret-pw@localhost:6379' });
    expect(env.code).toBe(2);
    expect(env.err).toMatch(
      /^error: REDIS_URL must be a redis:\/\/, .* got "http:\/\/\*\*\*:\*\*\*@localhost:6379"\.\n/,
    );
    expect(flag.err + env.err).not.toContain('s3cret-pw');

    const alias = await cli(['inspect'], { THREADMILL_ALIAS: 'no spaces allowed' });
    expect(alias.code).toBe(2);
    expect(alias.err).toMatch(/--alias must be 1-64 letters/);
  });

  it('exits 1 with one clear line when Redis does not answer (REDIS_URL)', async () => {
    const result = await cli(['inspect'], { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    expect(result.err.trim().split('\n')).toHaveLength(1);
    expect(result.err).toMatch(/^threadmill inspect: cannot reach Redis at 127\.0\.0\.1:1\/0: .*ECONNREFUSED/);
    expect(result.err).toMatch(/Start Redis, or set REDIS_URL \(or pass --redis URL\)\.\n$/);
  });
});
