import { RedisUnavailableError, TaskInspector, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { uniqueAlias } from '../../support/backend.js';
import { Harness } from '../../support/harness.js';
import { Witness } from '../../support/witness.js';
import { WorkerProcess } from '../../support/worker-process.js';

/** How a rig's Redis and pool are set up. */
export interface RigOptions {
  appendfsync?: 'always' | 'everysec';
  leaseTtlMs?: number;
  workers?: number;
  concurrency?: number;
  prefetch?: number;
}

/** What the oracle concluded about a set of runs. */
export interface Verdict {
  /** Confirmed runs that did not end SUCCESSFUL with a completion in the witness. */
  readonly lost: string[];
  /** The lost runs Redis no longer holds at all (their enqueue did not survive). */
  readonly missing: string[];
  readonly duplicates: number;
  readonly statuses: Record<string, number>;
}

/**
 * A system under test and its oracle: a Redis with AOF for Threadmill, a
 * separate witness Redis (appendfsync always) where every execution counts
 * itself per run id, a producer that records only the ids whose enqueue
 * Redis confirmed, and a real worker pool (supervisor + processes).
 */
export class FaultRig {
  private pool: WorkerProcess | undefined;
  /** When Redis confirmed each enqueued run (ms since the epoch). */
  readonly confirmedAt = new Map<string, number>();

  private constructor(
    readonly alias: string,
    readonly redis: RedisServer,
    readonly witnessRedis: RedisServer,
    readonly producer: Harness,
    readonly witness: Witness,
    private readonly options: Required<RigOptions>,
  ) {}

  static async start(options: RigOptions = {}): Promise<FaultRig> {
    const resolved = {
      appendfsync: 'everysec',
      leaseTtlMs: 1_000,
      workers: 2,
      concurrency: 8,
      prefetch: 4,
      ...options,
    } as const;
    const redis = await RedisServer.start({ appendonly: true, appendfsync: resolved.appendfsync });
    const witnessRedis = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
    const alias = uniqueAlias('fault');
    const producer = await Harness.start({ options: { alias, connection: redis.url, connectTimeoutMs: 2_000 } });
    return new FaultRig(alias, redis, witnessRedis, producer, new Witness(alias, witnessRedis.url), resolved);
  }

  /** Starts the worker pool. */
  startPool(): WorkerProcess {
    const { workers, concurrency, prefetch, leaseTtlMs } = this.options;
    this.pool = WorkerProcess.start(
      this.alias,
      ['--workers', String(workers), '--concurrency', String(concurrency), '--prefetch', String(prefetch)],
      {
        REDIS_URL: this.redis.url,
        WITNESS_URL: this.witnessRedis.url,
        LEASE_TTL_MS: String(leaseTtlMs),
        BROKER_INTERVAL_MS: '200',
      },
    );
    return this.pool;
  }

  /**
   * Enqueues `count` witness runs of 5..`maxMs` ms in batches, retrying a
   * batch that Redis did not confirm with the same ids (idempotent), and
   * returns the ids Redis confirmed.
   */
  async enqueue(count: number, maxMs: number, batch = 500): Promise<string[]> {
    const confirmed: string[] = [];
    for (let first = 0; first < count; first += batch) {
      const items = Array.from({ length: Math.min(batch, count - first) }, () => ({
        task: 'WitnessService.work',
        args: [5 + Math.floor(Math.random() * (maxMs - 5))],
        id: randomUUID(),
      }));
      for (;;) {
        try {
          await this.producer.queue.enqueueMany(items);
          break;
        } catch (error) {
          if (!(error instanceof RedisUnavailableError)) throw error;
          await delay(100);
        }
      }
      const now = Date.now();
      for (const { id } of items) this.confirmedAt.set(id, now);
      confirmed.push(...items.map((item) => item.id));
    }
    return confirmed;
  }

  /** Runs leased right now, by every worker (running and prefetched). */
  async inFlight(): Promise<number> {
    const [counts] = await this.producer.queue.counts(['default']);
    return counts!.running;
  }

  /** Resolves once the witness saw `count` completions. */
  async completedAtLeast(count: number, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.witness.completed()) < count) {
      if (Date.now() > deadline) throw new Error(`fewer than ${count} completions after ${timeoutMs} ms`);
      await delay(50);
    }
  }

  /** Runs held right now by worker process `workerId` (running and prefetched). */
  async heldBy(workerId: string): Promise<number> {
    // One page holds them all: leases are bounded by workers × (concurrency + prefetch).
    const running = await this.producer.module.get(TaskInspector).list('default', 'running', { limit: 1_000 });
    return running.filter((run) => run.workerIds.at(-1) === workerId).length;
  }

  /** Waits until no run of `ids` is pending any more (or `timeoutMs` passes). */
  async settle(ids: string[], timeoutMs: number): Promise<(TaskResult | null)[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const results = await this.results(ids);
      const pending = results.filter((r) => r?.status === TaskStatus.READY || r?.status === TaskStatus.RUNNING);
      if (pending.length === 0 || Date.now() > deadline) return results;
      await delay(250);
    }
  }

  /** Lost runs (confirmed, not SUCCESSFUL) and duplicate executions, from the witness; `results` in the order of `ids`. */
  async verdict(ids: string[], results: (TaskResult | null)[]): Promise<Verdict> {
    const completions = await this.witness.completions();
    const statuses: Record<string, number> = {};
    for (const r of results) {
      const status = r?.status ?? 'MISSING';
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
    const lost = ids.filter((id, i) => results[i]?.status !== TaskStatus.SUCCESSFUL || !completions.get(id));
    const missing = ids.filter((_, i) => !results[i]);
    const duplicates = ids.reduce((sum, id) => sum + Math.max((completions.get(id) ?? 0) - 1, 0), 0);
    return { lost, missing, duplicates, statuses };
  }

  /** Stale acknowledgements Redis discarded on the default queue. */
  async staleAcks(): Promise<number> {
    const stats = await this.producer.backend.connections.client.hgetall(this.producer.backend.keys.stats('default'));
    return Number(stats['staleAcks'] ?? 0);
  }

  async stop(): Promise<void> {
    if (this.pool) {
      this.pool.signal('SIGTERM');
      await this.pool.waitForExit(30_000);
    }
    await this.producer.close();
    this.witness.close();
    await this.redis.stop();
    await this.witnessRedis.stop();
  }

  /** The runs of `ids` in order, null where Redis does not hold the run. */
  private async results(ids: string[]): Promise<(TaskResult | null)[]> {
    const results: (TaskResult | null)[] = [];
    for (let first = 0; first < ids.length; first += 1_000) {
      results.push(...(await this.producer.queue.getResults(ids.slice(first, first + 1_000))));
    }
    return results;
  }
}
