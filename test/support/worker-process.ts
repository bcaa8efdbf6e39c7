import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { redisUrl } from './backend.js';

const FIXTURES = fileURLToPath(new URL('../../dist/test/fixtures/', import.meta.url));
const WORKER_MAIN = `${FIXTURES}worker-main.js`;

/** Entry points of the fixture applications: the runWorker pool, a plain microservice, a hybrid HTTP app, a pool of an app with two backends, a pool configured through ThreadmillWorkerModule. */
export type FixtureApp =
  'worker-main' | 'microservice-main' | 'hybrid-main' | 'named-worker-main' | 'configured-worker-main';

/** A real worker application process (the fixture worker, as built by `npm run build`). */
export class WorkerProcess {
  private output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /**
   * @param group start it as the leader of its own process group, whose
   *   members it forks: `signalGroup` then signals them all at once, as a
   *   terminal's Ctrl-C or a service manager does
   */
  static start(
    alias: string,
    args: string[] = [],
    env: Record<string, string> = {},
    group = false,
    app: FixtureApp = 'worker-main',
  ): WorkerProcess {
    const main = app === 'worker-main' ? WORKER_MAIN : `${FIXTURES}${app}.js`;
    if (!existsSync(main)) {
      throw new Error(`${main} is missing: run \`npm run build\` before the end-to-end tests.`);
    }
    const child = spawn(process.execPath, [main, ...args], {
      env: { ...process.env, REDIS_URL: redisUrl(), THREADMILL_ALIAS: alias, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: group,
    });
    const worker = new WorkerProcess(child);
    worker.group = group;
    return worker;
  }

  private group = false;

  /** Signals every process of its group (started with `group`). */
  signalGroup(signal: NodeJS.Signals): void {
    if (!this.group) throw new Error('signalGroup needs a process started with group = true');
    process.kill(-this.child.pid!, signal);
  }

  get log(): string {
    return this.output;
  }

  get pid(): number {
    return this.child.pid!;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Resolves once the output matches `pattern`. */
  async waitForOutput(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.output)) {
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(`worker output never matched ${pattern}:\n${this.output}`);
      }
      await delay(20);
    }
  }

  /** Waits for the exit (killing the process after `timeoutMs`). */
  async waitForExit(timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return exit;
  }

  /** Kills the process if it still runs (test cleanup). */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    // Its own group outlives it: take any member still there down with it.
    if (this.group) {
      try {
        process.kill(-this.child.pid!, 'SIGKILL');
      } catch {
        // The group is empty.
      }
    }
  }
}
