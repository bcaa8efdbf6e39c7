import { spawn, type ChildProcess } from 'node:child_process';

/** A demo process (worker app or demo API) whose output is kept for when it fails. */
export class ChildApp {
  private output = '';
  readonly exited: Promise<number | null>;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-20_000)));
    child.stderr?.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-20_000)));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static start(name: string, script: string, args: string[], env: NodeJS.ProcessEnv): ChildApp {
    return new ChildApp(name, spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get log(): string {
    return this.output;
  }

  /** Resolves once the output matches `pattern` `times` times; rejects if the process exits first. */
  async waitForOutput(pattern: RegExp, times = 1, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const global = new RegExp(pattern.source, 'g');
    while ((this.output.match(global)?.length ?? 0) < times) {
      if (!this.running) throw new Error(`the ${this.name} exited:\n${this.output}`);
      if (Date.now() > deadline)
        throw new Error(`the ${this.name} did not get ready within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 15_000): Promise<number | null> {
    if (!this.running) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
