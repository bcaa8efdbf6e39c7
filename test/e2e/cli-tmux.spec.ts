import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { MailService, SlowService } from '../fixtures/fixture-tasks.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { waitUntil } from '../support/wait.js';

const BIN = fileURLToPath(new URL('../../libs/threadmill-cli/bin/threadmill.js', import.meta.url));
const execFileAsync = promisify(execFile);

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

/**
 * A tmux server of the test's own, on a socket in the test's directory, so it
 * neither sees nor touches anyone's sessions and leaves nothing behind.
 */
class Tmux {
  readonly session = `inspect-${randomUUID().slice(0, 8)}`;

  constructor(private readonly socket: string) {}

  async tmux(...args: string[]): Promise<string> {
    const { stdout } = await execFileAsync('tmux', ['-S', this.socket, ...args], {
      env: { ...process.env, LANG: 'C.UTF-8' },
    });
    return stdout;
  }

  start(command: string): Promise<string> {
    return this.tmux('new-session', '-d', '-s', this.session, '-x', '80', '-y', '24', command);
  }

  capture(): Promise<string> {
    return this.tmux('capture-pane', '-p', '-t', this.session);
  }

  keys(...keys: string[]): Promise<string> {
    return this.tmux('send-keys', '-t', this.session, ...keys);
  }

  async alive(): Promise<boolean> {
    try {
      await this.tmux('has-session', '-t', this.session);
      return true;
    } catch {
      return false;
    }
  }

  /** Waits until the pane matches; fails showing the last capture. */
  async until(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    let screen = '';
    try {
      await waitUntil(
        `the pane shows ${pattern}`,
        async () => pattern.test((screen = await this.capture())),
        timeoutMs,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; the pane was:\n${screen}`, { cause: error });
    }
    return screen;
  }

  async kill(): Promise<void> {
    await this.tmux('kill-server').catch(() => undefined);
  }
}

describe('threadmill inspect in a real 80×24 terminal (tmux)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('shows the queues with their counts within 80 columns, switches tabs and quits on q', async () => {
    const alias = uniqueAlias('tmux');
    const harness = await Harness.start({ options: { alias } });
    cleanups.push(() => harness.close());
    await harness.queue.enqueue(SlowService, 'sleep', [10]);
    await harness.backend.claim(['default'], 1, 'host:1:0', 0);
    await harness.queue.enqueueMany(Array.from({ length: 3 }, (_, i) => ({ task: 'MathService.add', args: [i, 1] })));
    await harness.queue.enqueue(MailService, 'send', [{ to: 'ann@example.com', subject: 'Hi' }]);

    const dir = await mkdtemp(join(tmpdir(), 'threadmill-e2e-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const exitFile = join(dir, 'exit-code');
    const tmux = new Tmux(join(dir, 'tmux.sock'));
    cleanups.push(() => tmux.kill());
    // CI=true, as on a CI runner: the inspector must still draw live in a real terminal.
    await tmux.start(
      `CI=true ${process.execPath} ${BIN} inspect --redis ${redisUrl()} --alias ${alias}; echo $? > ${exitFile}`,
    );

    //                                          READY RUN DEFER SUCC FAIL QUAR
    const screen = await tmux.until(/▸ default\s+3\s+1\s+0\s+0\s+0\s+0\s/, 30_000);
    expect(screen).toMatch(/ {2}emails\s+1\s+0\s+0\s+0\s+0\s+0\s/);
    expect(screen).toMatch(/ {2}reports\s+0\s+0\s+0\s+0\s+0\s+0\s/);
    expect(screen).toContain(`Threadmill · 3 queues · 0 workers · ${alias}@`);
    const full = await tmux.until(/(MathService\.add\s+READY[^]*){3}/);
    expect(full.split('\n').filter((line) => [...line].length > 80)).toEqual([]);

    await tmux.keys('2');
    const running = await tmux.until(/▸ \S+ SlowService\.sleep\s+RUNNING\s+1 /);
    expect(running).toContain('default · running: run 1 of 1');
    expect(running.split('\n').filter((line) => [...line].length > 80)).toEqual([]);

    await tmux.keys('q');
    await waitUntil('the session is gone', async () => !(await tmux.alive()), 10_000);
    expect((await readFile(exitFile, 'utf8')).trim()).toBe('0');
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
  });

  it('exits 2 naming the flag on a bad flag', async () => {
    const interval = await cli(['inspect', '--interval', '10']);
    expect(interval.code).toBe(2);
    expect(interval.err).toMatch(/--interval must be an integer from 250 to 3600000 \(ms\), got "10"/);

    const unknown = await cli(['inspect', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown option '--bogus'/);

    const redis = await cli(['inspect', '--redis', 'http://localhost:6379']);
    expect(redis.code).toBe(2);
    expect(redis.err).toMatch(/--redis must be a redis:\/\/, rediss:\/\/ or unix:\/\/ URL/);

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
    expect(result.err).toMatch(/Start Redis, or pass --redis URL \(or set REDIS_URL\)\.\n$/);
  });
});
