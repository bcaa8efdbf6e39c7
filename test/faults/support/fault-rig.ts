import { RedisUnavailableError, TaskInspector, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { uniqueAlias } from '../../support/backend.js';
import { Harness } from '../../support/harness.js';
import { Witness } from '../../support/witness.js';
import { WorkerProcess } from '../../support/worker-process.js';
import { judge, WITH_RETRY, WITHOUT_RETRY, type Kills, type Verdict } from './fault-verdict.js';

/** How a rig's Redis and pool are set up. */
export interface RigOptions {
  appendfsync?: 'always' | 'everysec';
  leaseTtlMs?: number;
  workers?: number;
  concurrency?: number;
  prefetch?: number;
}

/** How a scenario enqueues its witness runs. */
export interface EnqueueOptions {
  /** Runs per `enqueueMany`. @defaultValue `500` */
  batch?: number;
  /**
   * The share of runs (0..1) of the task without a retry policy
   * (`WitnessService.once`), spread evenly; the others are `WitnessService.work`.
   * @defaultValue `0`
   */
  withoutRetry?: number;
  /**
   * How long each run without a retry policy holds its worker's event loop
   * as it starts, in ms: the window in which a kill finds an attempt started
   * but its start mark not sent, which the worker then owes no charge for.
   * @defaultValue `0`
   */
  busyMs?: number;
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
  /** The worker processes `sigkill` killed, and the runs they leased when they died. */
  readonly kills = { pids: new Set<number>(), cut: new Set<string>() } satisfies Kills;

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

  /**
   * Starts the worker pool.
   * @param redisUrl where the pool connects (a proxy in front of the rig's Redis, say)
   */
  startPool(redisUrl = this.redis.url): WorkerProcess {
    const { workers, concurrency, prefetch, leaseTtlMs } = this.options;
    this.pool = WorkerProcess.start(
      this.alias,
      ['--workers', String(workers), '--concurrency', String(concurrency), '--prefetch', String(prefetch)],
      {
        REDIS_URL: redisUrl,
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
  async enqueue(count: number, maxMs: number, options: EnqueueOptions = {}): Promise<string[]> {
    const { batch = 500, withoutRetry = 0, busyMs = 0 } = options;
    // Run k is of the task without retry when the share's running total crosses an integer at k.
    const runOf = (k: number) => {
      const ms = 5 + Math.floor(Math.random() * (maxMs - 5));
      return Math.floor((k + 1) * withoutRetry) > Math.floor(k * withoutRetry)
        ? { task: WITHOUT_RETRY, args: [ms, busyMs], id: randomUUID() }
        : { task: WITH_RETRY, args: [ms], id: randomUUID() };
    };
    const confirmed: string[] = [];
    for (let first = 0; first < count; first += batch) {
      const items = Array.from({ length: Math.min(batch, count - first) }, (_, i) => runOf(first + i));
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

  /**
   * SIGKILLs the worker process of `workerId` (`host:pid:slot`) and records
   * the kill. Returns how many runs it leased just before (running and
   * prefetched), or null when it was killed already or had exited. Read
   * right after the kill, the runs still leased to it are all those the kill
   * can have cut: the dead process leases nothing more, and a run it had
   * leased that is no longer was settled by its own acknowledgement.
   */
  async sigkill(workerId: string): Promise<number | null> {
    const pid = Number(workerId.split(':').at(-2));
    if (this.kills.pids.has(pid)) return null;
    const before = (await this.leasedBy(workerId)).length;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      return null;
    }
    this.kills.pids.add(pid);
    for (const id of await this.leasedBy(workerId)) this.kills.cut.add(id);
    return before;
  }

  /** The runs leased right now by worker process `workerId` (running and prefetched). */
  private async leasedBy(workerId: string): Promise<string[]> {
    // One page holds them all: leases are bounded by workers × (concurrency + prefetch).
    const running = await this.producer.module.get(TaskInspector).list('default', 'running', { limit: 1_000 });
    return running.filter((run) => run.workerIds.at(-1) === workerId).map((run) => run.id);
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

  /**
   * The oracle's verdict on `ids` (`results` in their order), from the
   * witness and the worker processes `sigkill` killed.
   */
  async verdict(ids: string[], results: (TaskResult | null)[]): Promise<Verdict> {
    const [startPids, completions] = await Promise.all([this.witness.startPids(), this.witness.completions()]);
    return judge(ids, results, { startPids, completions }, this.kills);
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
