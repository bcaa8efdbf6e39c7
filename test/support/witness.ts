import { Redis } from 'ioredis';
import { redisUrl } from './backend.js';

/** Reads what WitnessService recorded for a backend alias. */
export class Witness {
  readonly client: Redis;

  /** @param url the witness Redis (default: the test run's Redis) */
  constructor(
    private readonly alias: string,
    url: string = redisUrl(),
  ) {
    this.client = new Redis(url);
  }

  private key(name: string): string {
    return `witness:${this.alias}:${name}`;
  }

  /** Completed executions per run id. */
  async completions(): Promise<Map<string, number>> {
    return toCounts(await this.client.hgetall(this.key('completions')));
  }

  /** Executions of `WitnessService.label` per label. */
  async labels(): Promise<Map<string, number>> {
    return toCounts(await this.client.hgetall(this.key('labels')));
  }

  /** Reports of `WitnessService.countdown` refused because their lease was gone, per attempt. */
  async refused(): Promise<Map<string, number>> {
    return toCounts(await this.client.hgetall(this.key('refused')));
  }

  /** Aborted executions of `WitnessService.cancellable` per run id: when (epoch ms) and the reason's class. */
  async aborts(): Promise<Map<string, { at: number; reason: string }>> {
    const fields = await this.client.hgetall(this.key('aborts'));
    return new Map(
      Object.entries(fields).map(([id, value]) => {
        const [at, reason] = value.split(' ');
        return [id, { at: Number(at), reason: reason! }];
      }),
    );
  }

  /** Returns of `WitnessService.cancellable` per run id (after an abort too). */
  async returns(): Promise<Map<string, number>> {
    return toCounts(await this.client.hgetall(this.key('returns')));
  }

  /** Started executions per run id. */
  async starts(): Promise<Map<string, number>> {
    return toCounts(await this.client.hgetall(this.key('starts')));
  }

  /** Started executions of one run: a read of its own count, however many runs the witness holds. */
  async startsOf(id: string): Promise<number> {
    return Number((await this.client.hget(this.key('starts'), id)) ?? 0);
  }

  /** The process (pid) of each start per run id, in the order the starts were counted. */
  async startPids(): Promise<Map<string, number[]>> {
    const pids = new Map<string, number[]>();
    for (const entry of await this.client.lrange(this.key('start-log'), 0, -1)) {
      // `<pid> <run id>`, as WitnessService logs it.
      const space = entry.indexOf(' ');
      const id = entry.slice(space + 1);
      pids.set(id, [...(pids.get(id) ?? []), Number(entry.slice(0, space))]);
    }
    return pids;
  }

  async completed(): Promise<number> {
    return [...(await this.completions()).values()].reduce((a, b) => a + b, 0);
  }

  /** Most executions that ever ran at once. */
  async peak(): Promise<number> {
    return Number((await this.client.get(this.key('peak'))) ?? 0);
  }

  /** Processes that completed executions. */
  async pids(): Promise<number[]> {
    return (await this.client.smembers(this.key('pids'))).map(Number);
  }

  /** The executions `WitnessService.interval` logged, in log order: start and end (null: never ended) by local clock. */
  async intervals(): Promise<{ pid: number; id: string; start: number; end: number | null }[]> {
    const open = new Map<string, { pid: number; id: string; start: number; end: number | null }>();
    const all: { pid: number; id: string; start: number; end: number | null }[] = [];
    for (const entry of await this.client.lrange(this.key('intervals'), 0, -1)) {
      const [kind, pid, id, at] = entry.split(' ');
      const key = `${pid} ${id}`;
      if (kind === 's') {
        const execution = { pid: Number(pid), id: id!, start: Number(at), end: null };
        open.set(key, execution);
        all.push(execution);
      } else {
        open.get(key)!.end = Number(at);
        open.delete(key);
      }
    }
    return all;
  }

  close(): void {
    this.client.disconnect();
  }
}

function toCounts(fields: Record<string, string>): Map<string, number> {
  return new Map(Object.entries(fields).map(([id, n]) => [id, Number(n)]));
}
