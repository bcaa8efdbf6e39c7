import { Logger } from '@nestjs/common';
import {
  TaskBackend,
  type Acknowledgement,
  type ClaimedRuns,
  type LeasedRun,
  type LeaseRenewal,
  type MemoryUsage,
  type MinuteMetrics,
  type NewRun,
  type Segment,
  type QueueCounts,
  type StoreOutcome,
  type StoredRun,
  type WorkerHeartbeat,
  type WorkerRecord,
  type ClaimWaiter,
  type LeaseRef,
  type WorkSignal,
  type FinishedFeed,
  type WatchReply,
  type RenewedLease,
  type RunReport,
  type StoredRateLimit,
  type StoredTaskLimit,
  type PurgeOptions,
  type RequeueableSegment,
  type RequeueAllOptions,
} from '../task-backend.js';
import { purgeInChunks } from './redis-purge.js';
import { requeueInChunks } from './redis-requeue-all.js';
import { upgradeInChunks } from './redis-upgrade.js';
import { MAX_LOG_LINES } from '../../records/run-report-limits.js';
import { StorageLayoutError } from '../../errors/storage-layout.error.js';
import { doneRunFields } from './done-record.js';
import { freshRunFields } from './fresh-record.js';
import { readTogether } from './read-together.js';
import { withLease } from './lease-value.js';
import { readMemoryUsage } from './redis-info.js';
import { RedisKeys } from './redis-keys.js';
import { RedisTelemetry } from './redis-telemetry.js';
import type { RedisClient } from './redis-client.js';
import { RedisConnections } from './redis-connections.js';
import { RedisWorkSignal } from './redis-work-signal.js';
import { CallIds } from './call-ids.js';
import { CappedQueues } from './capped-queues.js';
import { formatRateLimit, parseRateLimit } from './rate-limit-value.js';
import { RateLimitedQueues } from './rate-limited-queues.js';
import { RedisClock } from './redis-clock.js';
import { formatTaskLimit, parseTaskLimit } from './task-limit-value.js';
import { leasedRuns, type ClaimReply } from './claim-reply.js';
import { CLAIM_MIN_SHARE, claimedRuns } from '../claim-rotation.js';
import { reapedRuns, type ReapReply } from './reap-reply.js';
import { RedisClaimWaiter, type ClaimCall } from './redis-claim-waiter.js';
import { RedisFinishedFeed, storedFields } from './redis-finished-feed.js';
import { STORAGE_LAYOUT } from './storage-layout.js';
import { moduleResultTtls, type ResultTtl, type ResultTtls } from '../../records/result-ttl.js';
import { encodeAcknowledgements } from './scripts/acknowledge-args.js';
import { dedupeKeyPlaces, encodeStore, readStoreReply } from './scripts/enqueue-args.js';
import { defineScripts, runScript } from './scripts/redis-scripts.js';
import { indexQueues, ScriptKeys } from './scripts/script-keys.js';
import { RedisScheduleStore } from './redis-schedules.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { FlowStore } from '../flow-store.js';
import { RedisFlowStore } from './redis-flows.js';
import type { ConfirmedStores } from './confirm/confirmed-stores.js';
import { reportGhosts } from './ghost-runs.js';
import { RunWaiter } from '../waiting/run-waiter.js';
import type { Waiter } from '../waiting/waiter.js';

/** What renew.lua answers per lease (see its header). */
const RENEWED: readonly RenewedLease[] = ['lost', 'held', 'paused', 'cancelled'];
/** Settings the Redis backend needs from the module options. */
export interface RedisBackendSettings {
  readonly alias: string;
  readonly leaseTtlMs: number;
  /** The default result TTL, of both outcomes or of each; a task may keep its runs for another. */
  readonly resultTtlMs: ResultTtl;
  readonly batchSize: number;
  /** Where stores go when `confirmEnqueues` is on: confirmed by the master's replicas. */
  readonly confirmed?: ConfirmedStores;
}

/**
 * Most runs one MULTI of `loadMany` reads: a larger call is read in several,
 * one after the other, so that none waits behind the rest past the command
 * timeout (a run's three reads stay in one MULTI).
 */
const LOAD_BATCH = 1_000;

/**
 * The Redis implementation of {@link TaskBackend}: every state change is one
 * Lua script call (see `lua/`), batched per call, with deadlines from the
 * Redis clock.
 */
export class RedisTaskBackend extends TaskBackend {
  readonly keys: RedisKeys;
  readonly schedules: ScheduleStore;
  readonly flows: FlowStore;
  private readonly scriptKeys: ScriptKeys;
  private readonly client: RedisClient;
  private readonly telemetry: RedisTelemetry;
  private readonly logger = new Logger('Threadmill');
  /** Queues the last claims found capped: their acknowledgements wake idle consumers. */
  private readonly cappedQueues = new CappedQueues();
  /** Redis's clock as this process knows it from replies. */
  private readonly clock: RedisClock;
  /** Queues the last claims found rate-limited: their runs' start slack, and when idle waits should end. */
  private readonly rateLimited: RateLimitedQueues;
  private readonly calls: CallIds;
  /** How long finished runs are kept per outcome, unless their task says otherwise. */
  private readonly resultTtls: ResultTtls;

  constructor(
    readonly connections: RedisConnections,
    private readonly settings: RedisBackendSettings,
  ) {
    super();
    this.keys = new RedisKeys(settings.alias);
    this.scriptKeys = new ScriptKeys(this.keys);
    this.calls = new CallIds(this.keys);
    this.resultTtls = moduleResultTtls(settings.resultTtlMs);
    this.client = connections.client;
    this.telemetry = new RedisTelemetry(this.client, this.keys);
    this.schedules = new RedisScheduleStore(connections, this.client, this.keys);
    this.flows = new RedisFlowStore(connections, this.client, this.keys, this.scriptKeys, this.resultTtls);
    this.clock = new RedisClock(connections.describe(), (message) => this.logger.warn(message));
    this.rateLimited = new RateLimitedQueues(this.clock);
    defineScripts(this.client);
  }

  async store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    await this.connections.ready();
    const { queues, index } = indexQueues(runs);
    // Only a call holding ids the caller chose, or dedupe keys, records itself
    // (see enqueue.lua): a resent copy of either could answer otherwise.
    const call = runs.some((run) => run.idempotent || run.dedupe !== undefined)
      ? this.calls.next()
      : this.calls.unnamed();
    const dedupe = dedupeKeyPlaces(runs, (run) => this.keys.dedupe(run.queue, run.dedupe!.key));
    const keys = this.scriptKeys.enqueue(queues, call.record, dedupe?.keys);
    const args = encodeStore(call.id, queues, runs, (queue) => index.get(queue)!, dedupe?.indexOf);
    if (this.settings.confirmed) return this.settings.confirmed.store(runs, keys, args);
    const reply = (await this.connections.guard(
      () => runScript(this.client, 'enqueue', keys, args),
      'The connection failed while the enqueue was in flight, so it may or may not have been stored: ' +
        'retry it with the same `id` to be safe.',
    )) as (number | string)[];
    return readStoreReply(runs, reply);
  }

  async prepare(): Promise<void> {
    await this.connections.ready();
    const { found, now } = await upgradeInChunks(this.client, this.scriptKeys.upgrade(), STORAGE_LAYOUT, (message) =>
      this.logger.log(`${this.keys.prefix}*: ${message}`),
    );
    if (found > STORAGE_LAYOUT) throw new StorageLayoutError(this.connections.describe(), found, STORAGE_LAYOUT);
    if (found > 0 && found < now) {
      this.logger.log(
        `Upgraded the storage layout of ${this.keys.prefix}* from ${found} to ${now} (the "Storage" page of the Threadmill docs, "Layout versions and upgrades").`,
      );
    }
    await this.ping();
  }

  /** How long a finished flow's record is kept: as long as the longer-kept of its nodes' outcomes. */
  private get flowTtl(): number {
    return Math.max(this.resultTtls.successful, this.resultTtls.failed);
  }

  override clockOffsetMs(): number | undefined {
    return this.clock.offsetMs();
  }

  /** Redis's time now as this process estimates it from replies (epoch ms); no call is made. */
  redisNow(): number {
    return this.clock.now();
  }

  async claim(queues: readonly string[], count: number, workerId: string, offset: number): Promise<ClaimedRuns> {
    await this.connections.ready();
    const call = this.claimCall(queues, JSON.stringify(workerId), count, offset);
    const sentAt = performance.now();
    const reply = await runScript(this.client, 'claim', call.keys, call.args);
    return call.read(reply, sentAt, performance.now());
  }

  claimWaiter(queues: readonly string[], workerId: string): ClaimWaiter {
    const worker = JSON.stringify(workerId);
    return new RedisClaimWaiter(
      this.connections,
      queues.map((q) => this.keys.wake(q)),
      this.keys.consumerWake(workerId),
      (count, offset) => this.claimCall(queues, worker, count, offset),
      (timeoutMs) => this.rateLimited.waitFor(queues, timeoutMs),
    );
  }

  /** How long an idle consumer of `queues` may wait: `timeoutMs`, or less when a rate limit frees a place sooner. */
  idleWaitMs(queues: readonly string[], timeoutMs: number): number {
    return this.rateLimited.waitFor(queues, timeoutMs);
  }

  /** A claim call of `count` runs; its id is the lease token of what it leases. */
  private claimCall(queues: readonly string[], worker: string, count: number, offset: number): ClaimCall {
    const { id, record } = this.calls.next();
    const { leaseTtlMs } = this.settings;
    return {
      keys: this.scriptKeys.claim(queues, record),
      args: [queues.length, count, leaseTtlMs, worker, offset, id, CLAIM_MIN_SHARE],
      read: (reply, sentAt, receivedAt) => {
        const [now, flat, ghosts, capped, limited, next] = reply as ClaimReply;
        this.clock.observe(now, sentAt, receivedAt);
        reportGhosts(this.logger, 'ready', ghosts);
        this.cappedQueues.saw(queues, capped, now);
        const runs = leasedRuns(now, id, flat, queues, worker, leaseTtlMs);
        this.rateLimited.saw(queues, limited, now, runs);
        return claimedRuns(runs, next);
      },
    };
  }

  async acknowledge(acks: readonly Acknowledgement[], started: readonly LeaseRef[] = []): Promise<boolean[]> {
    if (acks.length === 0 && started.length === 0) return [];
    await this.connections.ready();
    const { queues, index } = indexQueues(started.length === 0 ? acks : [...acks, ...started]);
    const { id, record } = this.calls.acknowledgement(acks);
    const keys = this.scriptKeys.acknowledge(queues, record);
    const { successful, failed } = this.resultTtls;
    const args: (string | number)[] = [queues.length, successful, failed, id];
    encodeAcknowledgements(args, acks, started, (queue) => index.get(queue)!, this.resultTtls);
    // The reply lists the (1-based) items that were stale: usually none.
    // Start marks come after the outcomes; whether they applied is not told.
    const reply = (await runScript(this.client, 'acknowledge', keys, args)) as number[];
    const applied = acks.map(() => true);
    for (let i = 1; i < reply.length; i++) if (reply[i]! <= acks.length) applied[reply[i]! - 1] = false;
    // Leases of a capped queue ended: its idle consumers, kept blocked while
    // it was at its cap, may lease again (`lua/wake.lua`). No call otherwise.
    const capped = this.cappedQueues.among(acks);
    if (capped.length > 0) await this.wakeQueues(capped);
    return applied;
  }

  /** Sets the wake marker of each of `queues` that has runs a claim may lease (`lua/wake.lua`); how many were set. */
  async wakeQueues(queues: readonly string[]): Promise<number> {
    return (await runScript(this.client, 'wake', this.scriptKeys.wake(queues), [])) as number;
  }

  async renew(worker: WorkerHeartbeat, recordTtlMs: number, leases: readonly LeaseRenewal[]): Promise<RenewedLease[]> {
    await this.connections.ready();
    const { queues, index } = indexQueues(leases);
    const keys = this.scriptKeys.renew(worker.id, queues);
    const record: [string, string | number][] = [
      ['id', worker.id],
      ['queues', worker.queues.join(',')],
      ['concurrency', worker.concurrency],
      ['startedAt', worker.startedAt],
      ['done', worker.done],
      ['held', worker.held],
    ];
    if (worker.clockOffsetMs !== undefined) record.push(['clockOffsetMs', worker.clockOffsetMs]);
    const args: (string | number)[] = [queues.length, worker.id, recordTtlMs, record.length, ...record.flat()];
    for (const lease of leases) args.push(lease.id, index.get(lease.queue)!, lease.token, lease.leaseTtlMs);
    const sentAt = performance.now();
    const reply = (await runScript(this.client, 'renew', keys, args)) as number[];
    this.clock.observe(reply[0]!, sentAt, performance.now());
    return reply.slice(1).map((flag) => RENEWED[flag]!);
  }

  async retire(workerId: string): Promise<void> {
    await this.connections.ready();
    await this.client.multi().zrem(this.keys.workers, workerId).del(this.keys.worker(workerId)).exec();
  }

  async workers(): Promise<WorkerRecord[]> {
    await this.connections.ready();
    return this.telemetry.workers();
  }

  async ping(): Promise<number> {
    await this.connections.ready();
    // Redis's time rather than PONG, in the same round trip: every health
    // check keeps this process's estimate of its clock offset fresh.
    const sentAt = performance.now();
    const now = (await this.connections.guard(() =>
      runScript(this.client, 'time', this.scriptKeys.time(), []),
    )) as number;
    const receivedAt = performance.now();
    this.clock.observe(now, sentAt, receivedAt);
    return receivedAt - sentAt;
  }

  async announceStart(run: LeaseRef): Promise<boolean> {
    await this.connections.ready();
    const keys = this.scriptKeys.start(run.queue);
    return (await runScript(this.client, 'start', keys, [run.id, run.token])) === 1;
  }

  async report(reports: readonly RunReport[]): Promise<boolean[]> {
    if (reports.length === 0) return [];
    await this.connections.ready();
    const { queues, index } = indexQueues(reports);
    const { id, record } = this.calls.next();
    const args: (string | number)[] = [queues.length, MAX_LOG_LINES, id];
    for (const r of reports) {
      args.push(r.id, index.get(r.queue)!, r.token, r.progress ?? '', r.lines.length, r.lines.join('\n'));
    }
    const reply = (await runScript(this.client, 'report', this.scriptKeys.report(queues, record), args)) as number[];
    const stored = reports.map(() => true);
    for (let i = 1; i < reply.length; i++) stored[reply[i]! - 1] = false;
    return stored;
  }

  async release(leases: readonly LeaseRef[]): Promise<boolean[]> {
    if (leases.length === 0) return [];
    await this.connections.ready();
    const { queues, index } = indexQueues(leases);
    const { id, record } = this.calls.next();
    const keys = this.scriptKeys.release(queues, record);
    const args: (string | number)[] = [id, queues.length];
    for (const lease of leases) args.push(lease.id, index.get(lease.queue)!, lease.token);
    const reply = (await runScript(this.client, 'release', keys, args)) as number[];
    return reply.slice(1).map((flag) => flag === 1);
  }

  async defer(leases: readonly (LeaseRef & { readonly delayMs: number })[]): Promise<boolean[]> {
    if (leases.length === 0) return [];
    await this.connections.ready();
    const { queues, index } = indexQueues(leases);
    const { id, record } = this.calls.next();
    const keys = this.scriptKeys.defer(queues, record);
    const args: (string | number)[] = [id, queues.length];
    for (const lease of leases) args.push(lease.id, index.get(lease.queue)!, lease.token, Math.round(lease.delayMs));
    const reply = (await runScript(this.client, 'defer', keys, args)) as number[];
    return reply.slice(1).map((flag) => flag === 1);
  }

  async promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }> {
    await this.connections.ready();
    const keys = this.scriptKeys.promote(queues);
    const [now, promoted, nextDue, ghosts] = (await runScript(this.client, 'promote', keys, [
      queues.length,
      this.settings.batchSize,
    ])) as [number, number, number, string[]];
    reportGhosts(this.logger, 'deferred', ghosts);
    return { now, promoted, nextDueAt: nextDue < 0 ? null : nextDue };
  }

  async reap(
    queues: readonly string[],
    claimTtlMs: number,
    maxRecoveries: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }> {
    await this.connections.ready();
    const keys = this.scriptKeys.reap(queues);
    const [now, flat, ghosts, nextDeadline, returned] = (await runScript(this.client, 'reap', keys, [
      queues.length,
      this.settings.batchSize,
      claimTtlMs,
      this.calls.next().id,
      maxRecoveries,
    ])) as ReapReply;
    reportGhosts(this.logger, 'running', ghosts);
    const runs = reapedRuns(now, flat, queues, claimTtlMs);
    return { runs, returned, nextDeadline: nextDeadline < 0 ? null : nextDeadline };
  }

  async trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }> {
    await this.connections.ready();
    const { successful, failed } = this.resultTtls;
    const args = [queues.length, successful, failed, this.settings.batchSize];
    const [, removed, next] = (await runScript(this.client, 'trim', this.scriptKeys.trim(queues), args)) as number[];
    return { removed: removed!, nextExpiryAt: next! < 0 ? null : next! };
  }

  async load(id: string): Promise<StoredRun | null> {
    return (await this.loadMany([id]))[0]!;
  }

  /**
   * Each run's fields, from its fresh record, done record or run hash, with its lease,
   * if any, overlaid (claims write only the lease).
   */
  async loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    await this.connections.ready();
    if (ids.length <= LOAD_BATCH) return this.loadBatch(ids);
    const runs: (StoredRun | null)[] = [];
    for (let first = 0; first < ids.length; first += LOAD_BATCH) {
      for (const run of await this.loadBatch(ids.slice(first, first + LOAD_BATCH))) runs.push(run);
    }
    return runs;
  }

  /** `loadMany` of at most `LOAD_BATCH` ids, in one MULTI (see `readTogether`). */
  private async loadBatch(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    if (ids.length === 0) return [];
    // One MULTI: a run settled between the reads cannot look half-settled. In
    // the order a run moves (fresh, then done or its run hash), leases last.
    const replies = await this.connections.guardRead(() =>
      readTogether(this.client, (batch) => {
        batch.hmget(this.keys.fresh, ...ids);
        batch.hmget(this.keys.done, ...ids);
        for (const id of ids) batch.hgetall(this.keys.run(id));
        batch.hmget(this.keys.leases, ...ids);
      }),
    );
    for (const [error] of replies) if (error) throw error;
    const records = replies[0]![1] as (string | null)[];
    const dones = replies[1]![1] as (string | null)[];
    const leases = replies[ids.length + 2]![1] as (string | null)[];
    return ids.map((_, i) => {
      // A run is in one place only: fresh, done, or its run hash (lua/includes/done.lua).
      const record = records[i];
      const done = dones[i];
      const fields = record ? freshRunFields(record) : done ? doneRunFields(done) : (replies[i + 2]![1] as StoredRun);
      return Object.keys(fields).length > 0 ? withLease(fields, leases[i] ?? null) : null;
    });
  }

  async counts(queues: readonly string[]): Promise<QueueCounts[]> {
    await this.connections.ready();
    return this.telemetry.counts(queues);
  }

  async list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    await this.connections.ready();
    return this.telemetry.list(queue, segment, offset, limit);
  }

  async requeue(id: string, queue: string): Promise<{ requeued: boolean; status: string }> {
    await this.connections.ready();
    const call = this.calls.next();
    const keys = this.scriptKeys.requeue(id, queue, call.record);
    const args = [id, call.id, queue];
    const [requeued, status] = (await runScript(this.client, 'requeue', keys, args)) as [number, string];
    return { requeued: requeued === 1, status };
  }

  /** In chunks: see `requeueInChunks`. */
  async requeueAll(queue: string, segment: RequeueableSegment, options?: RequeueAllOptions): Promise<number> {
    await this.connections.ready();
    const keys = (record: string) => this.scriptKeys.requeueAll(queue, record);
    return requeueInChunks(this.client, queue, segment, keys, () => this.calls.next(), options);
  }

  async registerQueues(queues: readonly string[]): Promise<void> {
    await this.connections.ready();
    if (queues.length > 0) await this.client.sadd(this.keys.queues, ...queues);
  }

  async knownQueues(): Promise<string[]> {
    await this.connections.ready();
    return this.telemetry.knownQueues();
  }

  async stats(queue: string): Promise<Record<string, number>> {
    await this.connections.ready();
    return this.telemetry.stats(queue);
  }

  async metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    await this.connections.ready();
    return this.telemetry.metrics(queue, minutes);
  }

  async readySince(queue: string): Promise<{ now: number; since: number | null }> {
    await this.connections.ready();
    const keys = this.scriptKeys.readyAge(queue);
    const [now, since] = (await runScript(this.client, 'readyAge', keys, [])) as [number, number];
    return { now, since: since < 0 ? null : since };
  }

  async cancel(id: string, queue: string): Promise<{ cancelled: boolean; status: string }> {
    await this.connections.ready();
    const call = this.calls.next();
    const keys = this.scriptKeys.cancel(id, queue, call.record);
    // Kept as long as a failure of the default TTL, and trimmed with them.
    const args = [id, call.id, queue, this.resultTtls.failed, this.flowTtl];
    const [cancelled, status] = (await runScript(this.client, 'cancel', keys, args)) as [number, string];
    return { cancelled: cancelled === 1, status };
  }

  async dequeue(id: string, queue: string): Promise<{ removed: boolean; status: string }> {
    await this.connections.ready();
    const call = this.calls.next();
    const keys = this.scriptKeys.dequeue(id, queue, call.record);
    const args = [id, call.id, queue, this.resultTtls.failed, this.flowTtl];
    const [removed, status] = (await runScript(this.client, 'dequeue', keys, args)) as [number, string];
    return { removed: removed === 1, status };
  }

  async leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    await this.connections.ready();
    return this.telemetry.leases(queue);
  }

  async memory(): Promise<MemoryUsage> {
    await this.connections.ready();
    return this.connections.guardRead(() => readMemoryUsage(this.client));
  }

  /** In chunks: see `purgeInChunks`. */
  async purge(queue: string, options?: PurgeOptions): Promise<number> {
    await this.connections.ready();
    const keys = (record: string) => this.scriptKeys.purge(queue, record);
    return purgeInChunks(this.client, queue, keys, () => this.calls.next(), options ?? {}, {
      failed: this.resultTtls.failed,
      flow: this.flowTtl,
    });
  }

  async pause(queue: string): Promise<{ pausedAt: number; changed: boolean }> {
    await this.connections.ready();
    const keys = this.scriptKeys.pause(queue);
    const [, pausedAt, changed] = (await runScript(this.client, 'pause', keys, [queue])) as number[];
    return { pausedAt: pausedAt!, changed: changed === 1 };
  }

  async resume(queue: string): Promise<{ changed: boolean }> {
    await this.connections.ready();
    const [, changed] = (await runScript(this.client, 'resume', this.scriptKeys.resume(queue), [])) as number[];
    return { changed: changed === 1 };
  }

  async pausedSince(queues: readonly string[]): Promise<(number | null)[]> {
    await this.connections.ready();
    return this.telemetry.pausedSince(queues);
  }

  async setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }> {
    await this.connections.ready();
    const keys = this.scriptKeys.cap(queue);
    const [, previous] = (await runScript(this.client, 'cap', keys, [queue, cap === null ? '' : cap])) as number[];
    return { previous: previous! < 0 ? null : previous! };
  }

  async setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }> {
    await this.connections.ready();
    const value = limit === null ? '' : formatRateLimit(limit);
    const [, previous] = (await runScript(this.client, 'rate', this.scriptKeys.rate(queue), [queue, value])) as [
      number,
      string,
    ];
    return { previous: parseRateLimit(previous) };
  }

  async rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    await this.connections.ready();
    return this.telemetry.rateLimits(queues);
  }

  async setTaskLimit(task: string, limit: StoredTaskLimit | null): Promise<{ previous: StoredTaskLimit | null }> {
    await this.connections.ready();
    const value = limit === null ? '' : formatTaskLimit(limit);
    const keys = this.scriptKeys.taskLimit();
    const [, previous] = (await runScript(this.client, 'taskLimit', keys, [task, value])) as [number, string];
    return { previous: parseTaskLimit(previous) };
  }

  /** Every task limit stored here, by task (a partitioned backend copies them to a new partition). */
  async allTaskLimits(): Promise<Map<string, StoredTaskLimit>> {
    await this.connections.ready();
    return this.telemetry.allTaskLimits();
  }

  async taskLimits(tasks: readonly string[]): Promise<(StoredTaskLimit | null)[]> {
    await this.connections.ready();
    return this.telemetry.taskLimits(tasks);
  }

  async concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    await this.connections.ready();
    return this.telemetry.concurrencyCaps(queues);
  }

  brokerSignal(): WorkSignal {
    return new RedisWorkSignal(this.connections.openBlocking('broker'), [this.keys.brokerWake]);
  }

  async watch(ids: readonly string[], expiryMs: number): Promise<WatchReply> {
    await this.connections.ready();
    const [lastId, ...states] = (await this.connections.guard(() =>
      runScript(this.client, 'watch', this.scriptKeys.watch(), [expiryMs, ...ids]),
    )) as [string, ...(0 | 1 | string[])[]];
    return {
      lastId,
      states: states.map((state) => (state === 0 ? null : state === 1 ? 'missing' : storedFields(state))),
    };
  }

  finishedFeed(onReady: () => void): FinishedFeed {
    return new RedisFinishedFeed(this.connections, this.keys.finished, onReady);
  }

  partitionView(): null {
    return null;
  }

  createWaiter(): Waiter {
    return new RunWaiter(this);
  }
}
