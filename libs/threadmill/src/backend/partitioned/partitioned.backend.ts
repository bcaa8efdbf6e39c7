import {
  TaskBackend,
  type Acknowledgement,
  type ClaimWaiter,
  type ClaimedRuns,
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
  type StoredTaskLimit,
  type StoreOutcome,
  type WatchReply,
  type WorkerHeartbeat,
  type WorkerRecord,
  type WorkSignal,
  type PurgeOptions,
  type RequeueableSegment,
  type RequeueAllOptions,
} from '../task-backend.js';
import type { Waiter } from '../waiting/waiter.js';
import { PartitionedRunWaiter } from './partitioned-run-waiter.js';
import { summedProgress } from './partition-progress.js';
import type { FlowStore } from '../flow-store.js';
import { PartitionedFlowStore } from './partitioned-flows.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { RedisConnections } from '../redis/redis-connections.js';
import type { RedisTaskBackend } from '../redis/redis.backend.js';
import { claimedRuns } from '../claim-rotation.js';
import { InvalidEnqueueError } from '../../errors/invalid-enqueue.error.js';
import { groupTask } from '../../limits/task-limit.js';
import { RedisWorkSignal } from '../redis/redis-work-signal.js';
import { groupByPartition, perPartition, senderOf } from './partition-groups.js';
import { PartitionLayout } from './partition-layout.js';
import type { PartitionView } from './partition-record.js';
import { PartitionSet, type PartitionedBackendSettings } from './partition-set.js';
import { PartitionHints, PartitionSignals } from './partition-signals.js';
import { PartitionedAcknowledgements } from './partitioned-acknowledgements.js';
import { PartitionedBrokerSteps } from './partitioned-broker-steps.js';
import { PartitionedClaimWaiter } from './partitioned-claim-waiter.js';
import { PartitionedLimits } from './partitioned-limits.js';
import { PartitionedReads } from './partitioned-reads.js';
import { PartitionedRenewal } from './partitioned-renewal.js';
import { storeByPartition } from './partitioned-store.js';
import { RunLocations } from './run-locations.js';

export type { PartitionedBackendSettings } from './partition-set.js';

/**
 * How long a consumer skips a partition a claim found empty, unless its wake
 * marker fires first: bounds how long a busy consumer leaves a partition's
 * new runs to others.
 */
const EMPTY_RECHECK_MS = 100;

/**
 * One logical backend over several partitions, each a {@link RedisTaskBackend}
 * on a hash tag of its own (`{alias}`, then `{alias:p1}`, ..., as recorded by
 * `PartitionTags`), so that a Redis Cluster spreads them over its masters.
 * Every script stays single-slot: this class only routes. A run's partition
 * follows from its id (see `PartitionRouter`); a call about several runs
 * becomes one call per partition they are in, in parallel; a lease goes back
 * to the partition that granted it; reads over a queue are summed or merged
 * over every partition. Global state (registered queues, schedules, worker
 * records, the partition record) lives in the home partition.
 * `docs/scale-out.md` states what holds across partitions.
 */
export class PartitionedTaskBackend extends TaskBackend {
  readonly schedules: ScheduleStore;
  readonly flows: FlowStore;
  private readonly set: PartitionSet;
  private readonly layout: PartitionLayout;
  private readonly limits: PartitionedLimits;
  private readonly reads: PartitionedReads;
  private readonly brokerSteps: PartitionedBrokerSteps;
  private readonly renewal: PartitionedRenewal;
  private readonly acknowledgements: PartitionedAcknowledgements;
  /** Lease token sender → the partition whose backend instance granted it: acknowledgements go back there. */
  private readonly senders = new Map<string, number>();
  /** Per consumer (worker id), which partitions its claims may skip. */
  private readonly hints = new Map<string, PartitionHints>();
  /** Where runs are, by id (found outside the partition their id routes to, when stored under another count). */
  private readonly located: RunLocations;

  constructor(
    readonly connections: RedisConnections,
    settings: PartitionedBackendSettings,
  ) {
    super();
    this.set = new PartitionSet(connections, settings);
    this.schedules = this.set.part(0).schedules;
    this.flows = new PartitionedFlowStore(this.set, (id) => this.partitionOfRun(id));
    this.limits = new PartitionedLimits(this.set);
    this.layout = new PartitionLayout(this.set, this.limits);
    this.reads = new PartitionedReads(this.set);
    this.located = new RunLocations(this.set);
    this.brokerSteps = new PartitionedBrokerSteps(this.set, (p, runs) => this.granted(p, runs));
    this.renewal = new PartitionedRenewal(this.set, (lease) => this.leasePartition(lease));
    this.acknowledgements = new PartitionedAcknowledgements(this.set, (lease) => this.leasePartition(lease));
  }

  /** Partitions that may hold runs now: every worker consumes them all. */
  get span(): number {
    return this.set.span;
  }

  /** The partition counts this process knows of, for health checks and inspectors. */
  partitionView(): PartitionView {
    return this.layout.current;
  }

  /** Partition `p`'s backend: a Redis backend on its own hash tag, sharing this backend's connections. */
  part(p: number): RedisTaskBackend {
    return this.set.part(p);
  }

  /** Partitions that may hold runs, home first. */
  partitions(): number[] {
    return this.set.partitions();
  }

  /** The keyspace alias of each partition that may hold runs, home first (`threadmill:{<alias>}:...`). */
  partitionAliases(): readonly string[] {
    return this.set.aliases.slice(0, this.span);
  }

  /** Records this process's partition count now and reads the others' (also done every 15 s; see `PartitionLayout`). */
  refresh(): Promise<void> {
    return this.layout.refresh();
  }

  override newRunIdBeside(id: string): string {
    return this.set.router.newRunIdBeside(id);
  }

  override newRunId(key?: string): string {
    return this.set.router.newRunId(key);
  }

  async store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    for (const run of runs) this.checkGroupRoute(run);
    const recording = this.layout.recordIfStale();
    if (recording) await recording;
    const groups = groupByPartition(runs, (run) => this.partitionOfRun(run.id));
    if (groups.size === 1) return this.set.watched(groups.keys().next().value!, (part) => part.store(runs));
    return storeByPartition(runs, groups, (p, items) => this.set.watched(p, (part) => part.store(items)));
  }

  prepare(): Promise<void> {
    return this.layout.prepare();
  }

  async claim(queues: readonly string[], count: number, workerId: string, offset: number): Promise<ClaimedRuns> {
    const hints = this.hints.get(workerId);
    const span = this.span;
    const queueCount = Math.max(1, queues.length);
    // The rotation's place is `partition * queues + queue`: it goes through
    // the queues of one partition, claim after claim, and on to the next
    // partition once a claim went past the last queue (docs/scale-out.md).
    const place = offset % (span * queueCount);
    const first = Math.floor(place / queueCount);
    const queueOffset = place % queueCount;
    let next = place;
    const runs: LeasedRun[] = [];
    let failure: { error: unknown } | undefined;
    for (let i = 0; i < span && runs.length < count; i++) {
      const p = (first + i) % span;
      // A partition whose master was found away is left to its probe (see `PartitionHealth`).
      if ((hints && !hints.mayHold(p)) || this.set.health.avoids(p)) continue;
      const want = count - runs.length;
      let got: ClaimedRuns;
      try {
        got = await this.set.watched(p, (part) => part.claim(queues, want, workerId, queueOffset));
      } catch (error) {
        // One master away must not stop the others' runs, nor strand what this
        // call leased already: the partition is skipped and tried again later.
        failure ??= { error };
        hints?.emptied(p);
        continue;
      }
      this.granted(p, got);
      for (const run of got) runs.push(run);
      if (got.length < want) hints?.emptied(p);
      if (got.length > 0) {
        next =
          got.next < queueCount ? p * queueCount + got.next : ((p + 1) % span) * queueCount + (got.next % queueCount);
      }
    }
    if (runs.length === 0 && failure) throw failure.error;
    return claimedRuns(runs, next);
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
      waitFor: (timeoutMs) => this.set.idleWaitMs(queues, timeoutMs),
      closed: () => this.hints.delete(workerId),
    });
  }

  /** Sets the wake marker of each of `queues` in partition `p` that has runs a claim may lease. */
  private async wake(p: number, queues: readonly string[]): Promise<void> {
    await this.part(p).wakeQueues(queues);
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
    return this.located.partitionOf(id);
  }

  /** One call per partition; a partition that does not answer leaves its outcomes undefined (see `PartitionedAcknowledgements`). */
  acknowledge(acks: readonly Acknowledgement[], started: readonly LeaseRef[] = []): Promise<(boolean | undefined)[]> {
    return this.acknowledgements.acknowledge(acks, started);
  }

  announceStart(run: LeaseRef): Promise<boolean> {
    return this.part(this.leasePartition(run)).announceStart(run);
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

  /**
   * The heartbeat goes to the home partition (where `workers()` reads it) and
   * with the leases of each other; a partition that does not answer leaves
   * only its own leases unrenewed (see `PartitionedRenewal`).
   */
  renew(
    worker: WorkerHeartbeat,
    recordTtlMs: number,
    leases: readonly LeaseRenewal[],
    answerWithinMs?: number,
  ): Promise<RenewedLease[]> {
    return this.renewal.renew(worker, recordTtlMs, leases, answerWithinMs);
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

  /** The partition whose master's clock is furthest from this host's: masters may disagree too. */
  override clockOffsetMs(): number | undefined {
    let furthest: number | undefined;
    for (const p of this.partitions()) {
      const offset = this.part(p).clockOffsetMs();
      if (offset !== undefined && (furthest === undefined || Math.abs(offset) > Math.abs(furthest))) furthest = offset;
    }
    return furthest;
  }

  promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }> {
    return this.brokerSteps.promote(queues);
  }

  reap(
    queues: readonly string[],
    claimTtlMs: number,
    maxRecoveries: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }> {
    return this.brokerSteps.reap(queues, claimTtlMs, maxRecoveries);
  }

  trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }> {
    return this.brokerSteps.trim(queues);
  }

  async load(id: string): Promise<StoredRun | null> {
    return (await this.loadMany([id]))[0]!;
  }

  /** Each run where its id routes it, else wherever it is found (see `RunLocations`). */
  loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    return this.located.loadMany(ids);
  }

  counts(queues: readonly string[]): Promise<QueueCounts[]> {
    return this.reads.counts(queues);
  }

  list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    return this.reads.list(queue, segment, offset, limit);
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

  stats(queue: string): Promise<Record<string, number>> {
    return this.reads.stats(queue);
  }

  metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    return this.reads.metrics(queue, minutes);
  }

  readySince(queue: string): Promise<{ now: number; since: number | null }> {
    return this.reads.readySince(queue);
  }

  cancel(id: string, queue: string): Promise<{ cancelled: boolean; status: string }> {
    return this.whereFound(id, (part) => part.cancel(id, queue));
  }

  dequeue(id: string, queue: string): Promise<{ removed: boolean; status: string }> {
    return this.whereFound(id, (part) => part.dequeue(id, queue));
  }

  leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    return this.reads.leases(queue);
  }

  /** On a Cluster, the fullest master's (see `readMemoryUsage`): every partition's master is read. */
  memory(): Promise<MemoryUsage> {
    return this.part(0).memory();
  }

  /** Each partition in its own chunks, side by side; progress sums them (done once every partition is). */
  async purge(queue: string, { onProgress, chunkSize }: PurgeOptions = {}): Promise<number> {
    const progress = summedProgress(this.set.span, (removed, chunkRemoved, done) =>
      onProgress?.({ queue, removed, chunkRemoved, done }),
    );
    const removed = await this.everyPartition((part, p) =>
      part.purge(queue, {
        chunkSize,
        onProgress: ({ removed: soFar, chunkRemoved: chunk, done }) => progress(p, { soFar, chunk, done }),
      }),
    );
    return removed.reduce((total, n) => total + n, 0);
  }

  /** Each partition in its own chunks, side by side; progress sums them (done once every partition is). */
  async requeueAll(
    queue: string,
    segment: RequeueableSegment,
    { onProgress, chunkSize }: RequeueAllOptions = {},
  ): Promise<number> {
    const progress = summedProgress(this.set.span, (requeued, chunkRequeued, done) =>
      onProgress?.({ queue, segment, requeued, chunkRequeued, done }),
    );
    const requeued = await this.everyPartition((part, p) =>
      part.requeueAll(queue, segment, {
        chunkSize,
        onProgress: ({ requeued: soFar, chunkRequeued: chunk, done }) => progress(p, { soFar, chunk, done }),
      }),
    );
    return requeued.reduce((total, n) => total + n, 0);
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

  /**
   * A run of a limit group must be stored in the group's partition, where
   * the group's limit is kept (each partition keeps its own groups): an id
   * Threadmill made was routed there, but an id the caller chose routes its
   * run by itself, and is refused where it would split a group. Nothing is
   * written.
   */
  private checkGroupRoute(run: NewRun): void {
    if (run.limitGroup === undefined || !run.idempotent) return;
    if (this.partitionOfRun(run.id) !== this.set.router.partitionOfKey(run.limitGroup)) {
      throw new InvalidEnqueueError(
        groupTask(run.limitGroup),
        `the id "${run.id}" routes its run to another partition than its limit group's, where the task's limit ` +
          'would not count it. On a partitioned backend, leave out the id of a task with a limit (use dedupe for ' +
          'idempotence).',
      );
    }
  }

  /** A task's limit holds per limit group, and a group lives in one partition: every partition keeps it whole. */
  async setTaskLimit(task: string, limit: StoredTaskLimit | null): Promise<{ previous: StoredTaskLimit | null }> {
    const replies = await this.everyPartition((part) => part.setTaskLimit(task, limit));
    return replies[0]!;
  }

  taskLimits(tasks: readonly string[]): Promise<(StoredTaskLimit | null)[]> {
    return this.part(0).taskLimits(tasks);
  }

  setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }> {
    return this.limits.setConcurrencyCap(queue, cap);
  }

  concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    return this.limits.concurrencyCaps(queues);
  }

  setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }> {
    return this.limits.setRateLimit(queue, limit);
  }

  rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    return this.limits.rateLimits(queues);
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
   * another's, so its waiter waits per partition (`PartitionedRunWaiter`)
   * and a call over several is refused.
   */
  watch(ids: readonly string[], expiryMs: number): Promise<WatchReply> {
    const partitions = new Set(ids.map((id) => this.partitionOfRun(id)));
    if (partitions.size > 1) {
      return Promise.reject(new Error('Runs of several partitions are watched one partition at a time.'));
    }
    return this.part(partitions.values().next().value ?? 0).watch(ids, expiryMs);
  }

  /** A waiter with a feed per partition: positions in one partition's feed mean nothing in another's. */
  createWaiter(): Waiter {
    return new PartitionedRunWaiter(this);
  }

  /** `call` on every partition that may hold runs, in parallel; the replies in partition order. */
  private everyPartition<R>(call: (part: RedisTaskBackend, p: number) => Promise<R>): Promise<R[]> {
    return this.set.every(call);
  }

  /** `call` where run `id` is (see `RunLocations.whereFound`). */
  private whereFound<R extends { status: string }>(
    id: string,
    call: (part: RedisTaskBackend) => Promise<R>,
  ): Promise<R> {
    return this.located.whereFound(id, call);
  }
}
