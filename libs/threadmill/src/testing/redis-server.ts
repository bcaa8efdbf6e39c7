import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Options of {@link RedisServer.start}. */
export interface RedisServerOptions {
  /** @defaultValue a free port */
  port?: number;
  /** Data directory. @defaultValue a fresh temporary directory, removed by `stop()` */
  dir?: string;
  /** Append-only file. @defaultValue `false` */
  appendonly?: boolean;
  /** @defaultValue `'everysec'` */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** @defaultValue `'noeviction'` */
  maxmemoryPolicy?: string;
  /** More `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
  args?: string[];
  /** @defaultValue `'redis-server'` from PATH */
  binary?: string;
}

/** Whether `redis-server` can be started from PATH. */
export function redisServerAvailable(binary = 'redis-server'): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** How many free ports {@link RedisServer.start} tries when the ones it chose turn out taken. */
const PORT_ATTEMPTS = 5;

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A throwaway `redis-server` on loopback with its own directory, for tests
 * and demos: never depends on a server someone else started. It can be
 * killed, paused and restarted (from its AOF) to inject faults.
 */
export class RedisServer {
  private process: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly ownsDir: boolean,
    private readonly options: RedisServerOptions,
  ) {}

  /**
   * Starts a server and resolves once it accepts connections. Without a
   * `port`, a free one is chosen, and another if the server finds its port
   * taken after all (another process may bind it between the check and the
   * server's start; a cluster node also needs the port 10,000 above it for
   * its bus, which the check does not see).
   */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    for (let attempt = 1; ; attempt++) {
      // A directory of its own per attempt: a failed start may have written files there.
      const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'threadmill-redis-'));
      const server = new RedisServer(options.port ?? (await freePort()), dir, !options.dir, options);
      try {
        await server.launch();
        return server;
      } catch (error) {
        if (!options.dir) rmSync(dir, { recursive: true, force: true });
        const taken = /Address already in use/.test(String((error as Error).message));
        if (options.port !== undefined || !taken || attempt === PORT_ATTEMPTS) throw error;
      }
    }
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  /** Starts the server again on the same port and directory (it reloads its AOF, if any). */
  async restart(): Promise<void> {
    await this.launch();
  }

  /** Sends `signal` and waits for the process to exit (SIGKILL: a crash, no final write). */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.process || this.process.exitCode !== null || this.process.signalCode !== null) return;
    this.process.kill(signal);
    await this.exited;
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  /** Thaws a paused server (SIGCONT). */
  resume(): void {
    this.process?.kill('SIGCONT');
  }

  /** Stops the server and removes its directory if `start` created it. */
  async stop(): Promise<void> {
    this.resume();
    await this.kill('SIGTERM');
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }

  private launch(): Promise<void> {
    const { appendonly = false, appendfsync = 'everysec', maxmemoryPolicy = 'noeviction', args = [] } = this.options;
    const child = spawn(
      this.options.binary ?? 'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        appendonly ? 'yes' : 'no',
        '--appendfsync',
        appendfsync,
        '--maxmemory-policy',
        maxmemoryPolicy,
        '--daemonize',
        'no',
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    this.log = '';
    // A test process that exits without stop() (a crash, a timeout) must not
    // leave its servers running: kill them on the way out.
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('did not become ready within 10 s')), 10_000);
      const onData = (chunk: Buffer) => {
        this.log += chunk.toString();
        if (/Ready to accept connections/.test(this.log)) {
          clearTimeout(timer);
          child.stdout?.off('data', onData);
          child.stdout?.resume();
          resolve();
        }
      };
      const fail = (error: Error) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(
          new Error(`redis-server on port ${this.port} failed to start: ${error.message}\n${this.log.slice(-2000)}`),
        );
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => (this.log += chunk.toString()));
      child.once('error', fail);
      child.once('exit', (code, signal) => fail(new Error(`exited (${code ?? signal})`)));
    });
  }
}
