import { Redis } from 'ioredis';

/** What Redis says about its own work, at one moment. */
export interface RedisSnapshot {
  /** used_cpu_user + used_cpu_sys, µs. */
  readonly cpuUs: number;
  readonly commands: number;
  /** calls per command since the last reset. */
  readonly calls: ReadonlyMap<string, number>;
}

function field(info: string, name: string): number {
  const match = new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info);
  return match ? Number(match[1]) : 0;
}

/** Reads Redis CPU and command counters (INFO), to charge each phase its Redis cost. */
export class RedisProbe {
  private readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url);
  }

  /** Resets the per-command counters (CONFIG RESETSTAT). */
  async reset(): Promise<void> {
    await this.client.config('RESETSTAT');
  }

  async snapshot(): Promise<RedisSnapshot> {
    const [cpu, stats, commandstats] = await Promise.all([
      this.client.info('cpu'),
      this.client.info('stats'),
      this.client.info('commandstats'),
    ]);
    const calls = new Map<string, number>();
    for (const [, command, count] of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      calls.set(command!, Number(count));
    }
    return {
      cpuUs: Math.round((field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys')) * 1e6),
      commands: field(stats, 'total_commands_processed'),
      calls,
    };
  }

  async flush(): Promise<void> {
    await this.client.flushall();
  }

  close(): void {
    this.client.disconnect();
  }
}
