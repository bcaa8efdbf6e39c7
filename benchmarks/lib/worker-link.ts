import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FromWorker, ToWorker } from '../workers/protocol.js';

/** A system's worker processes, driven over IPC. */
export class WorkerLink {
  private readonly progress = new Map<ChildProcess, { count: number; firstAt: number; lastAt: number }>();
  private readonly listeners = new Set<() => void>();

  private constructor(private readonly children: ChildProcess[]) {
    for (const child of children) {
      child.on('message', (message: FromWorker) => {
        if (message.type === 'progress') this.progress.set(child, message);
        for (const listener of this.listeners) listener();
      });
    }
  }

  /** Forks `processes` workers of `script` and resolves once each is ready. */
  static async start(script: string, processes: number, env: Record<string, string>): Promise<WorkerLink> {
    const path = fileURLToPath(new URL(`../workers/${script}`, import.meta.url));
    const children = Array.from({ length: processes }, (_, slot) =>
      fork(path, [], {
        env: { ...process.env, ...env, THREADMILL_POOL_SLOT: String(slot) },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      }),
    );
    const link = new WorkerLink(children);
    await Promise.all(children.map((child) => link.reply(child, 'ready')));
    return link;
  }

  /** Zeroes every worker's counters and CPU baseline. */
  async reset(): Promise<void> {
    this.progress.clear();
    await Promise.all(this.children.map((child) => this.ask(child, { cmd: 'reset' }, 'reset')));
  }

  /** Resolves with the first and last handler call once `total` calls were counted over all workers. */
  waitForCount(total: number, timeoutMs: number): Promise<{ firstAt: number; lastAt: number }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`only ${this.count()} of ${total} handled after ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        if (this.count() < total) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        const all = [...this.progress.values()].filter((p) => p.count > 0);
        resolve({ firstAt: Math.min(...all.map((p) => p.firstAt)), lastAt: Math.max(...all.map((p) => p.lastAt)) });
      };
      this.listeners.add(check);
      check();
    });
  }

  /** CPU (µs) and RSS (bytes) summed over workers since the last reset, and their latencies. */
  async stats(): Promise<{ cpuUs: number; rssBytes: number; latencies: number[] }> {
    const replies = await Promise.all(
      this.children.map(
        (child) => this.ask(child, { cmd: 'stats' }, 'stats') as Promise<Extract<FromWorker, { type: 'stats' }>>,
      ),
    );
    return {
      cpuUs: replies.reduce((sum, r) => sum + r.cpuUs, 0),
      rssBytes: replies.reduce((sum, r) => sum + r.rssBytes, 0),
      latencies: replies.flatMap((r) => r.latencies),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
          }),
      ),
    );
  }

  private count(): number {
    return [...this.progress.values()].reduce((sum, p) => sum + p.count, 0);
  }

  private ask(child: ChildProcess, message: ToWorker, type: FromWorker['type']): Promise<FromWorker> {
    const reply = this.reply(child, type);
    child.send(message);
    return reply;
  }

  private reply(child: ChildProcess, type: FromWorker['type']): Promise<FromWorker> {
    return new Promise((resolve, reject) => {
      const onMessage = (message: FromWorker) => {
        if (message.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(message);
      };
      const onExit = (code: number | null) => reject(new Error(`worker exited (${code}) before answering ${type}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  }
}
