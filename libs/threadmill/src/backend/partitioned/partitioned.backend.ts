import { Logger } from '@nestjs/common';
import {
  TaskBackend,
  type Acknowledgement,
  type ClaimWaiter,
  type FinishedFeed,
  type LeasedRun,
  type LeaseRef,
  type LeaseRenewal,
  type MemoryUsage,
  type MinuteMetrics,
  type NewRun,
  type QueueCounts,
  type RenewedLease,
  type RunReport,
  type Segment,
  type StoredRateLimit,
  type StoredRun,
  type StoreOutcome,
  type WatchReply,
  type WorkerHeartbeat,
  type WorkerRecord,
  type WorkSignal,
} from '../task-backend.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { RedisConnections } from '../redis/redis-connections.js';
import { RedisTaskBackend, type RedisBackendSettings } from '../redis/redis.backend.js';
import { RedisWorkSignal } from '../redis/redis-work-signal.js';
import { runScript } from '../redis/scripts/redis-scripts.js';
import { groupByPartition, perPartition, senderOf, type PartitionGroup } from './partition-groups.js';
import { capFromShares, capShares, rateFromShares, rateShares } from './partition-limits.js';
import { interleavePages, mergeLeases, sumCounts, sumMetrics, sumStats } from './partition-merge.js';
import { mismatchMessage, PartitionRecord, RECORD_EVERY_MS, type PartitionView } from './partition-record.js';
import { PartitionRouter } from './partition-router.js';
import { PartitionHints, PartitionSignals } from './partition-signals.js';
import { PartitionTags } from './partition-tags.js';
import { PartitionedClaimWaiter } from './partitioned-claim-waiter.js';
import { RunLocations } from './run-locations.js';

/** Settings of a partitioned backend: the Redis backend's, and how many partitions take new runs. */
export interface PartitionedBackendSettings extends RedisBackendSettings {
  readonly partitions: number;
  /**
   * An observer (a standalone inspector) reads the partition record without
   * recording a count of its own: it runs no producer or worker.
   */
  readonly observer?: boolean;
}

/**
 * How long a consumer skips a partition a claim found empty, unless its wake
 * marker fires first: bounds how long a busy consumer leaves a partition's
 * new runs to others.
 */
const EMPTY_RECHECK_MS = 100;

/**
 * One logical backend over several partitions, each a {@link RedisTaskBackend}
 * on a hash tag of its own (`{alias}`, then `{alias:p1}`, ..., as recorded by
 * {@link PartitionTags}), so that a Redis Cluster spreads them over its masters. Every script stays single-slot:
 * this class only routes. A run's partition follows from its id (see
 * {@link PartitionRouter}); a call about several runs becomes one call per
 * partition they are in, in parallel; reads over a queue are summed or
 * merged over every partition. Global state (registered queues, schedules,
 * worker records, the partition record) lives in the home partition.
 * `docs/scale-out.md` states what holds across partitions.
 */
export class PartitionedTaskBackend extends TaskBackend {
  readonly schedules: ScheduleStore;
  readonly router: PartitionRouter;
  private readonly logger = new Logger('Threadmill');
  private readonly parts: RedisTaskBackend[] = [];
  private readonly record: PartitionRecord;
  private readonly tags: PartitionTags;
  /** The keyspace alias of each partition known so far, home first. */
  private aliases: string[];
  /** Lease token sender → the partition whose backend instance granted it: acknowledgements go back there. */
  private readonly senders = new Map<string, number>();
  /** Per consumer (worker id), which partitions its claims may skip. */
  private readonly hints = new Map<string, PartitionHints>();
  /** Each acknowledgement batch's split, so that a batch sent again is the same call in each partition. */
  private readonly ackGroups = new WeakMap<readonly Acknowledgement[], Map<number, PartitionGroup<Acknowledgement>>>();
  /** Runs found outside the partition their id routes to (stored before the partition count changed). */
  private readonly located = new RunLocations();
  private view: PartitionView;
  private recording: NodeJS.Timeout | undefined;
  /** Partitions below this one are prepared (their keys at this version's layout). */
  private prepared = 1;
  /** The span the limits were last spread over. */
  private spreadOver = 0;
  /** The mismatch last logged, so that it is logged once. */
  private reported = '';

  constructor(
    readonly connections: RedisConnections,
    private readonly settings: PartitionedBackendSettings,
  ) {
    super();
    this.router = new PartitionRouter(settings.partitions);
    this.aliases = [settings.alias];
    const { prefix } = this.part(0).keys;
    this.schedules = this.part(0).schedules;
    this.record = new PartitionRecord(connections.client, `${prefix}partition-counts`);
    this.tags = new PartitionTags(connections.client, `${prefix}partition-tags`, settings.alias);
    this.view = { partitions: settings.partitions, span: settings.partitions, others: [] };
  }

  /** Partitions that may hold runs now: every worker consumes them all. */
  get span(): number {
    return this.router.span;
  }

  /** The partition counts this process knows of, for health checks and inspectors. */
  partitionView(): PartitionView {
    return this.view;
  }

  /** Partition `p`'s backend: a Redis backend on its own hash tag, sharing this backend's connections. */
  part(p: number): RedisTaskBackend {
    const alias = this.aliases[p];
    if (alias === undefined) throw new Error(`Partition ${p} is used before its alias was read (prepare first).`);
    return (this.parts[p] ??= new RedisTaskBackend(this.connections, { ...this.settings, alias }));
  }

  /** The keyspace alias of each partition that may hold runs, home first (`threadmill:{<alias>}:...`). */
  partitionAliases(): readonly string[] {
    return this.aliases.slice(0, this.span);
  }

  override newRunId(key?: string): string {
    return this.router.newRunId(key);
  }

  async store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    const groups = groupByPartition(runs, (run) => this.partitionOfRun(run.id));
    if (groups.size === 1) return this.part(groups.keys().next().value!).store(runs);
    let now = 0;
    const created = runs.map(() => false);
    let deduplicated: (string | undefined)[] | undefined;
    // Each partition's share is one atomic script call; a failure of one
    // after another stored is reported as the failed store it is (see
    // docs/scale-out.md, "enqueueMany").
    await Promise.all(
      [...groups].map(async ([p, group]) => {
        const outcome = await this.part(p).store(group.items);
        now = Math.max(now, outcome.now);
        group.places.forEach((place, i) => {
          created[place] = outcome.created[i]!;
          const answer = outcome.deduplicated?.[i];
          if (answer !== undefined) (deduplicated ??= Array.from({ length: runs.length }))[place] = answer;
        });
      }),
    );
    return deduplicated ? { now, created, deduplicated } : { now, created };
  }

  async prepare(): Promise<void> {
    // Home first: it refuses keys a newer version wrote before anything else is touched.
    await this.part(0).prepare();
    await this.refresh();
    if (this.settings.observer) return;
    this.recording ??= setInterval(() => void this.refresh().catch(() => undefined), RECORD_EVERY_MS).unref();
    this.connections.client.once('end', () => clearInterval(this.recording));
  }

  /**
   * Records this process's partition count and reads the others' (done at
   * boot and every {@link RECORD_EVERY_MS}): the span grows at once to the
   * largest count recorded (its new partitions are prepared, and limits
   * spread over them), and a mismatch is logged once.
   */
  async refresh(): Promise<void> {
    if (this.connections.client.status === 'end') return clearInterval(this.recording);
    const view = this.settings.observer
      ? await this.record.view(this.settings.partitions)
      : await this.record.register(this.settings.partitions);
    if (view.span > this.aliases.length) this.aliases = await this.tags.aliases(view.span);
    for (; this.prepared < view.span; this.prepared++) await this.part(this.prepared).prepare();
    this.router.span = Math.max(this.router.span, view.span);
    this.view = view;
    if (this.spreadOver !== this.span) {
      await this.spreadLimits();
      this.spreadOver = this.span;
    }
    const message = mismatchMessage(view);
    if (message !== '' && message !== this.reported) this.logger.warn(message);
    this.reported = message;
  }

  async claim(queues: readonly string[], count: number, workerId: string, offset: number): Promise<LeasedRun[]> {
    const hints = this.hints.get(workerId);
    const span = this.span;
    // The rotation turns over partitions first, then over the queues within one.
    const queueOffset = Math.floor(offset / span);
    const runs: LeasedRun[] = [];
    for (let i = 0; i < span && runs.length < count; i++) {
      const p = (offset + i) % span;
      if (hints && !hints.mayHold(p)) continue;
      const want = count - runs.length;
      const got = await this.part(p).claim(queues, want, workerId, queueOffset);
      this.granted(p, got);
      for (const run of got) runs.push(run);
      if (got.length < want) hints?.emptied(p);
    }
    return runs;
  }

  claimWaiter(queues: readonly string[], workerId: string): ClaimWaiter {
    const hints = new PartitionHints(EMPTY_RECHECK_MS);
    this.hints.set(workerId, hints);
    const signals = new PartitionSignals(
      (p) =>
        new RedisWorkSignal(
          this.connections.openBlocking('wake'),
          queues.map((queue) => this.part(p).keys.wake(queue)),
        ),
      () => this.span,
      (p) => {
        // Popped while this consumer was busy: it claims there next, and the
        // marker goes back for idle consumers elsewhere.
        hints.ready(p);
        void this.wake(p, queues).catch(() => undefined);
        return false;
      },
    );
    return new PartitionedClaimWaiter(signals, hints, {
      claim: (count, offset) => this.claim(queues, count, workerId, offset),
      waitFor: (timeoutMs) =>
        this.parts.reduce((wait, part) => Math.min(wait, part.idleWaitMs(queues, wait)), timeoutMs),
      closed: () => this.hints.delete(workerId),
    });
  }

  /** Sets the wake marker of each of `queues` in partition `p` that has ready runs (`lua/wake.lua`). */
  private async wake(p: number, queues: readonly string[]): Promise<void> {
    const { keys } = this.part(p);
    const wakeKeys = queues.flatMap((queue) => [keys.wake(queue), keys.ready(queue), keys.readyList(queue)]);
    await runScript(this.connections.client, 'wake', wakeKeys, []);
  }

  /** Notes which partition granted the leases of `runs` (one claim or reap call: one token sender). */
  private granted(p: number, runs: readonly LeasedRun[]): void {
    if (runs.length > 0) this.senders.set(senderOf(runs[0]!.token), p);
  }

  /** The partition of a lease: the one that granted its token, else where its id routes. */
  private leasePartition(lease: LeaseRef): number {
    return this.senders.get(senderOf(lease.token)) ?? this.partitionOfRun(lease.id);
  }

  /** The partition run `id` is in: where it was found last when its id routes elsewhere, else where it routes. */
  partitionOfRun(id: string): number {
    return this.located.get(id) ?? this.router.partitionOf(id);
  }

  async acknowledge(acks: readonly Acknowledgement[], started: readonly LeaseRef[] = []): Promise<boolean[]> {
    if (acks.length === 0 && started.length === 0) return [];
    let ackGroups = this.ackGroups.get(acks);
    if (!ackGroups) this.ackGroups.set(acks, (ackGroups = groupByPartition(acks, (ack) => this.leasePartition(ack))));
    const startGroups = groupByPartition(started, (lease) => this.leasePartition(lease));
    const partitions = new Set([...ackGroups.keys(), ...startGroups.keys()]);
    if (partitions.size === 1) {
      return this.part(partitions.values().next().value!).acknowledge(acks, started);
    }
    const applied = acks.map(() => false);
    await Promise.all(
      [...partitions].map(async (p) => {
        const group = ackGroups.get(p);
        const replies = await this.part(p).acknowledge(group?.items ?? [], startGroups.get(p)?.items ?? []);
        group?.places.forEach((place, i) => (applied[place] = replies[i]!));
      }),
    );
    return applied;
  }

  markStarted(run: LeaseRef): Promise<boolean> {
    return this.part(this.leasePartition(run)).markStarted(run);
  }

  report(reports: readonly RunReport[]): Promise<boolean[]> {
    const groups = groupByPartition(reports, (report) => this.leasePartition(report));
    return perPartition(groups, reports.length, (p, items) => this.part(p).report(items));
  }

  release(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const groups = groupByPartition(leases, (lease) => this.leasePartition(lease));
    return perPartition(groups, leases.length, (p, items) => this.part(p).release(items));
  }

  defer(leases: readonly (LeaseRef & { readonly delayMs: number })[]): Promise<boolean[]> {
    const groups = groupByPartition(leases, (lease) => this.leasePartition(lease));
    return perPartition(groups, leases.length, (p, items) => this.part(p).defer(items));
  }

  /** The heartbeat goes to the home partition (where `workers()` reads it) and with the leases of each other. */
  async renew(worker: WorkerHeartbeat, recordTtlMs: number, leases: readonly LeaseRenewal[]): Promise<RenewedLease[]> {
    const groups = groupByPartition(leases, (lease) => this.leasePartition(lease));
    if (!groups.has(0)) groups.set(0, { items: [], places: [] });
    return perPartition(groups, leases.length, (p, items) => this.part(p).renew(worker, recordTtlMs, items));
  }

  async retire(workerId: string): Promise<void> {
    await this.everyPartition((part) => part.retire(workerId));
  }

  workers(): Promise<WorkerRecord[]> {
    return this.part(0).workers();
  }

  ping(): Promise<number> {
    return this.part(0).ping();
  }

  async promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }> {
    const replies = await this.everyPartition((part) => part.promote(queues));
    return {
      now: replies[0]!.now,
      promoted: replies.reduce((total, reply) => total + reply.promoted, 0),
      nextDueAt: earliest(replies.map((reply) => reply.nextDueAt)),
    };
  }

  async reap(
    queues: readonly string[],
    claimTtlMs: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }> {
    const replies = await this.everyPartition((part) => part.reap(queues, claimTtlMs));
    replies.forEach((reply, p) => this.granted(p, reply.runs));
    return {
      runs: replies.flatMap((reply) => reply.runs),
      returned: replies.reduce((total, reply) => total + reply.returned, 0),
      nextDeadline: earliest(replies.map((reply) => reply.nextDeadline)),
    };
  }

  async trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }> {
    const replies = await this.everyPartition((part) => part.trim(queues));
    return {
      removed: replies.reduce((total, reply) => total + reply.removed, 0),
      nextExpiryAt: earliest(replies.map((reply) => reply.nextExpiryAt)),
    };
  }

  async load(id: string): Promise<StoredRun | null> {
    return (await this.loadMany([id]))[0]!;
  }

  /**
   * Each run from the partition its id routes to; an id not found there is
   * looked for in the others (a run stored before the partition count
   * changed), and remembered where it was found.
   */
  async loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    const groups = groupByPartition(ids, (id) => this.partitionOfRun(id));
    const runs = await perPartition(groups, ids.length, (p, items) => this.part(p).loadMany(items));
    const missing = ids.flatMap((_, i) => (runs[i] === null ? [i] : []));
    if (missing.length === 0) return runs;
    await Promise.all(
      this.partitions().map(async (p) => {
        const places = missing.filter((i) => !groups.get(p)?.places.includes(i));
        if (places.length === 0) return;
        const found = await this.part(p).loadMany(places.map((i) => ids[i]!));
        places.forEach((place, i) => {
          if (found[i] === null || runs[place] !== null) return;
          runs[place] = found[i]!;
          this.located.set(ids[place]!, p);
        });
      }),
    );
    return runs;
  }

  async counts(queues: readonly string[]): Promise<QueueCounts[]> {
    if (queues.length === 0) return [];
    return sumCounts(await this.everyPartition((part) => part.counts(queues)));
  }

  async list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    const pages = await this.everyPartition((part) => part.list(queue, segment, 0, offset + limit));
    return interleavePages(pages, offset, limit);
  }

  requeue(id: string, queue: string): Promise<{ requeued: boolean; status: string }> {
    return this.whereFound(id, (part) => part.requeue(id, queue));
  }

  registerQueues(queues: readonly string[]): Promise<void> {
    return this.part(0).registerQueues(queues);
  }

  knownQueues(): Promise<string[]> {
    return this.part(0).knownQueues();
  }

  async stats(queue: string): Promise<Record<string, number>> {
    return sumStats(await this.everyPartition((part) => part.stats(queue)));
  }

  async metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    return sumMetrics(await this.everyPartition((part) => part.metrics(queue, minutes)));
  }

  async readySince(queue: string): Promise<{ now: number; since: number | null }> {
    const replies = await this.everyPartition((part) => part.readySince(queue));
    return { now: replies[0]!.now, since: earliest(replies.map((reply) => reply.since)) };
  }

  cancel(id: string, queue: string): Promise<{ cancelled: boolean; status: string }> {
    return this.whereFound(id, (part) => part.cancel(id, queue));
  }

  dequeue(id: string, queue: string): Promise<{ removed: boolean; status: string }> {
    return this.whereFound(id, (part) => part.dequeue(id, queue));
  }

  async leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    return mergeLeases(await this.everyPartition((part) => part.leases(queue)));
  }

  /** On a Cluster, the fullest master's (see `readMemoryUsage`): every partition's master is read. */
  memory(): Promise<MemoryUsage> {
    return this.part(0).memory();
  }

  async purge(queue: string): Promise<number> {
    const removed = await this.everyPartition((part) => part.purge(queue));
    return removed.reduce((total, n) => total + n, 0);
  }

  async pause(queue: string): Promise<{ pausedAt: number; changed: boolean }> {
    const replies = await this.everyPartition((part) => part.pause(queue));
    return { pausedAt: replies[0]!.pausedAt, changed: replies.some((reply) => reply.changed) };
  }

  async resume(queue: string): Promise<{ changed: boolean }> {
    const replies = await this.everyPartition((part) => part.resume(queue));
    return { changed: replies.some((reply) => reply.changed) };
  }

  pausedSince(queues: readonly string[]): Promise<(number | null)[]> {
    return this.part(0).pausedSince(queues);
  }

  async setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }> {
    const shares = capShares(queue, cap, this.span);
    const replies = await this.everyPartition((part, p) => part.setConcurrencyCap(queue, shares[p]!));
    return { previous: capFromShares(replies.map((reply) => reply.previous)) };
  }

  async concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    const shares = await this.everyPartition((part) => part.concurrencyCaps(queues));
    return queues.map((_, q) => capFromShares(shares.map((caps) => caps[q]!)));
  }

  async setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }> {
    const shares = rateShares(queue, limit, this.span);
    const replies = await this.everyPartition((part, p) => part.setRateLimit(queue, shares[p]!));
    return { previous: rateFromShares(replies.map((reply) => reply.previous)) };
  }

  async rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    const shares = await this.everyPartition((part) => part.rateLimits(queues));
    return queues.map((_, q) => rateFromShares(shares.map((limits) => limits[q]!)));
  }

  /**
   * Spreads every registered queue's cap and rate limit over the span again
   * (after it grew, new partitions have no share yet): the shares of each
   * add up to what they added up to before. Idempotent.
   */
  private async spreadLimits(): Promise<void> {
    const queues = await this.knownQueues();
    if (queues.length === 0) return;
    const [caps, limits] = await Promise.all([this.concurrencyCaps(queues), this.rateLimits(queues)]);
    for (const [q, queue] of queues.entries()) {
      // A limit below the span cannot be split: it stays as it is, and the next setter is refused.
      if (caps[q] !== null && caps[q]! >= this.span) await this.setConcurrencyCap(queue, caps[q]!);
      if (limits[q] !== null && limits[q]!.max >= this.span) await this.setRateLimit(queue, limits[q]!);
    }
  }

  /** Wakes on a new deferred run or first lease of any partition (one blocked connection per partition). */
  brokerSignal(): WorkSignal {
    const signals = new PartitionSignals(
      (p) => new RedisWorkSignal(this.connections.openBlocking('broker'), [this.part(p).keys.brokerWake]),
      () => this.span,
      // Popped during a pass: the next wait returns at once, for another pass.
      () => true,
    );
    return {
      wait: async (timeoutMs) => (await signals.wait(timeoutMs)).size > 0,
      close: () => signals.close(),
    };
  }

  /**
   * Registers runs of one partition for waiting (see `TaskBackend.watch`):
   * each partition has its own feed, whose positions mean nothing in
   * another's, so `TaskQueue.waitFor` waits per partition
   * (`PartitionedRunWaiter`) and a call over several is refused.
   */
  watch(ids: readonly string[], expiryMs: number): Promise<WatchReply> {
    const partitions = new Set(ids.map((id) => this.partitionOfRun(id)));
    if (partitions.size > 1) {
      return Promise.reject(new Error('Runs of several partitions are watched one partition at a time.'));
    }
    return this.part(partitions.values().next().value ?? 0).watch(ids, expiryMs);
  }

  finishedFeed(): FinishedFeed {
    throw new Error('A partitioned backend reads finished runs per partition (PartitionedRunWaiter).');
  }

  /** Partitions that may hold runs, home first. */
  partitions(): number[] {
    return Array.from({ length: this.span }, (_, p) => p);
  }

  /** `call` on every partition that may hold runs, in parallel; the replies in partition order. */
  private everyPartition<R>(call: (part: RedisTaskBackend, p: number) => Promise<R>): Promise<R[]> {
    return Promise.all(this.partitions().map((p) => call(this.part(p), p)));
  }

  /**
   * `call` on the partition run `id` routes to; when that partition has no
   * such run (`status` ''), on the others in turn until one has it.
   */
  private async whereFound<R extends { status: string }>(
    id: string,
    call: (part: RedisTaskBackend) => Promise<R>,
  ): Promise<R> {
    const routed = this.partitionOfRun(id);
    const reply = await call(this.part(routed));
    if (reply.status !== '') return reply;
    for (const p of this.partitions()) {
      if (p === routed) continue;
      const other = await call(this.part(p));
      if (other.status !== '') {
        this.located.set(id, p);
        return other;
      }
    }
    return reply;
  }
}

/** The earliest of some times (epoch ms), or null when none is set. */
function earliest(times: readonly (number | null)[]): number | null {
  let first: number | null = null;
  for (const time of times) if (time !== null && (first === null || time < first)) first = time;
  return first;
}
