import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { redisUrl } from '../../support/backend.js';
import type { WorkerProcess } from '../../support/worker-process.js';

const FIXTURES = fileURLToPath(new URL('../../../dist/test/fixtures/', import.meta.url));
const CLOCK_OFFSET = `${FIXTURES}clock-offset.js`;
const PRODUCER_MAIN = `${FIXTURES}scripted-producer-main.js`;

/** The warning a process logs once its wall clock is more than 500 ms off Redis's (`RedisClock`). */
export const SKEW_WARNING = /runs \d+ ms (ahead of|behind) the clock of Redis/;

/**
 * The environment of a process whose wall clock runs `offsetMs` ahead of the
 * host's (negative: behind): the preload shifts `Date` in it and, through
 * NODE_OPTIONS, in every process it forks (a pool's members).
 */
export function skewedEnv(offsetMs: number): Record<string, string> {
  if (!existsSync(CLOCK_OFFSET)) throw new Error(`${CLOCK_OFFSET} is missing: run \`npm run build\` first.`);
  const inherited = process.env['NODE_OPTIONS'] ?? '';
  return {
    NODE_OPTIONS: `${inherited} --import ${CLOCK_OFFSET}`.trim(),
    THREADMILL_TEST_CLOCK_OFFSET_MS: String(offsetMs),
  };
}

/** The processes a pool forked (its members), by `ps`. */
export function membersOf(pool: WorkerProcess): number[] {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pool.pid)], { encoding: 'utf8' });
  return children.split('\n').filter(Boolean).map(Number);
}

/** A reply of the scripted producer: the command's result, or the error it threw as text. */
export interface ProducerReply<T> {
  readonly result?: T;
  readonly error?: string;
}

/**
 * A producer process (`test/fixtures/scripted-producer-main.ts`) with a
 * wall clock `offsetMs` off the host's, driven command by command.
 */
export class ScriptedProducer {
  private output = '';
  private next = 0;
  private readonly waiting = new Map<number, (reply: ProducerReply<unknown>) => void>();
  private readonly ready: Promise<void>;

  private constructor(
    readonly offsetMs: number,
    private readonly child: ChildProcess,
  ) {
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    let booted: () => void;
    this.ready = new Promise((resolve) => (booted = resolve));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      this.output += `${line}\n`;
      if (line === 'ready') return booted();
      if (!line.startsWith('{"n":')) return;
      const { n, ...reply } = JSON.parse(line) as { n: number } & ProducerReply<unknown>;
      this.waiting.get(n)?.(reply);
      this.waiting.delete(n);
    });
  }

  static start(alias: string, offsetMs: number, env: Record<string, string> = {}): ScriptedProducer {
    if (!existsSync(PRODUCER_MAIN)) throw new Error(`${PRODUCER_MAIN} is missing: run \`npm run build\` first.`);
    const child = spawn(process.execPath, [PRODUCER_MAIN], {
      env: { ...process.env, REDIS_URL: redisUrl(), THREADMILL_ALIAS: alias, ...skewedEnv(offsetMs), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new ScriptedProducer(offsetMs, child);
  }

  /** Resolves once the producer booted (or fails after `timeoutMs`). */
  async booted(timeoutMs = 60_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`producer never booted:\n${this.output}`)), timeoutMs);
    });
    await Promise.race([this.ready, timeout]).finally(() => clearTimeout(timer));
  }

  /** What it printed, warnings included. */
  get log(): string {
    return this.output;
  }

  enqueue<T>(task: string, args: unknown[], options?: object): Promise<ProducerReply<T>> {
    return this.send({ task, args, options });
  }

  cancel<T>(id: string): Promise<ProducerReply<T>> {
    return this.send({ cancel: id });
  }

  /** Closes its stdin (it exits) and waits for its exit, killing it after `timeoutMs`. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }

  private send<T>(command: object): Promise<ProducerReply<T>> {
    const n = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(n, resolve as (reply: ProducerReply<unknown>) => void);
      this.child.stdin!.write(`${JSON.stringify({ n, ...command })}\n`);
    });
  }
}
