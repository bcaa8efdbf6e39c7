import { MemoryScheduleStore } from './memory-schedules.js';
import { MemoryFlowStore } from './memory-flows.js';
import {
  TaskBackend,
  type Acknowledgement,
  type ClaimedRuns,
  type ClaimWaiter,
  type FinishedFeed,
  type LeasedRun,
  type LeaseRef,
  type LeaseRenewal,
  type MemoryUsage,
  type MinuteMetrics,
  type NewRun,
  type QueueCounts,
  type Segment,
  type StoreOutcome,
  type StoredRun,
  type WatchReply,
  type WorkerHeartbeat,
  type WorkerRecord,
  type WorkSignal,
  type RenewedLease,
  type RunReport,
  type StoredRateLimit,
  type StoredTaskLimit,
  type PurgeOptions,
  type RequeueableSegment,
  type RequeueAllOptions,
} from '../../backend/task-backend.js';
import { claimedRuns, rotateClaim } from '../../backend/claim-rotation.js';
import { applyReport } from './memory-report.js';
import { applyAcknowledgement, leaseHolds } from './memory-acknowledge.js';
import { cancelRun } from './memory-cancel.js';
import {
  expiryOf,
  leaseHolds as holdsAt,
  mayHandBack,
  renewalAnswer,
  startAnnounced,
  startMarked,
} from '../../rules/lease-rules.js';
import { dequeueable, isDue } from '../../rules/run-rules.js';
import { requeueRun, requeueSegment } from './memory-requeue.js';
import { MemoryClock } from './memory-clock.js';
import { MemoryRun } from './memory-run.js';
import { memoryClaimWaiter, memoryWorkSignal } from './memory-signals.js';
import { BROKER_TOPIC, MemoryState, type MemoryBackendSettings } from './memory-state.js';
import { RunWaiter } from '../../backend/waiting/run-waiter.js';
import type { Waiter } from '../../backend/waiting/waiter.js';

/**
 * Called with the ids of runs a store or a requeue just made pending, before
 * the call resolves (the testing module's immediate mode runs them).
 */
export type PendingListener = (ids: readonly string[]) => Promise<void>;

/**
 * A {@link TaskBackend} that keeps runs in process memory, with the
 * semantics of the Redis backend's scripts (`lua/*.lua`, `docs/storage.md`):
 * the same fields under the same names, ready order (priority, then FIFO),
 * deferral, leases fenced by token, retries, results with their TTL, the
 * inspector's counts and listings, and the feed `TaskQueue.waitFor` reads.
 * It opens no connection. A conformance suite
 * (`test/integration/conformance/`) holds the two backends to the same
 * behaviour.
 *
 * Every call is atomic, as a script call is: it runs to completion in one
 * turn of the event loop.
 */
export class InMemoryTaskBackend extends TaskBackend {
  readonly state: MemoryState;
  readonly schedules: MemoryScheduleStore;
  readonly flows: MemoryFlowStore;
  private pendingListener: PendingListener | undefined;

  constructor(settings: MemoryBackendSettings, clock = new MemoryClock()) {
    super();
    this.state = new MemoryState(settings, clock);
    this.schedules = new MemoryScheduleStore(this.state, (run) => this.store([run]));
    this.flows = new MemoryFlowStore(this.state, async (ids) => this.pendingListener?.(ids));
  }

  get clock(): MemoryClock {
    return this.state.clock;
  }

  /** Sets who is told of runs that a store or a requeue made pending, before the call resolves (one listener). */
  onPending(listener: PendingListener | undefined): void {
    this.pendingListener = listener;
  }

  async store(runs: readonly NewRun[]): Promise<StoreOutcome> {
    const { state } = this;
    const now = state.clock.now();
    const stored: string[] = [];
    let deduplicated: (string | undefined)[] | undefined;
    const created = runs.map((run, i) => {
      if (state.runs.has(run.id)) return false;
      const into = run.dedupe && state.dedupe.apply(state, run, now);
      if (into !== undefined) {
        (deduplicated ??= runs.map(() => undefined))[i] = into;
        return false;
      }
      const queue = state.queue(run.queue);
      const score = state.nextScore(run.priority);
      const fields: Record<string, string> = {
        payload: run.payload,
        queue: run.queue,
        score: String(score),
        enqueuedAt: String(now),
      };
      if (run.leaseTtlMs > 0) fields['leaseTtl'] = String(run.leaseTtlMs);
      if (run.limitGroup !== undefined) fields['group'] = run.limitGroup;
      const due = run.runAt > 0 ? run.runAt : run.delayMs > 0 ? now + run.delayMs : 0;
      state.runs.set(run.id, new MemoryRun(run.id, run.queue, fields));
      if (due > now) {
        fields['runAfter'] = String(due);
        queue.deferred.set(run.id, due);
        state.wakeups.wake(BROKER_TOPIC);
      } else {
        queue.ready.set(run.id, score);
        state.wakeups.wake(run.queue);
      }
      queue.countMinute(now, 'enqueued');
      stored.push(run.id);
      return true;
    });
    if (this.pendingListener && stored.length > 0) await this.pendingListener(stored);
    return deduplicated ? { now, created, deduplicated } : { now, created };
  }

  async prepare(): Promise<void> {}

  async claim(queues: readonly string[], count: number, workerId: string, offset: number): Promise<ClaimedRuns> {
    const { state } = this;
    const now = state.clock.now();
    const token = state.nextCall();
    const worker = JSON.stringify(workerId);
    // A paused queue gives nothing: its runs wait READY (see `pause`); a
    // capped one no more than its cap leaves room for beside its leases.
    const orders = queues.map((name) => {
      if (state.paused.has(name)) return [];
      // Runs of limit groups without room wait, holding back nothing else.
      const ready = state.groups.admit(state, name, state.queue(name).ordered('ready'), now);
      return ready.slice(0, state.room(name, now));
    });
    const claimed: LeasedRun[] = [];
    const taken = queues.map(() => 0);
    // The queues in turn from `offset`, each a share (the rule of claim.lua).
    const lease = (q: number, take: number): readonly [number, boolean] => {
      const ids = orders[q]!.slice(taken[q], taken[q]! + take);
      taken[q]! += ids.length;
      for (const id of ids) {
        const run = state.runs.get(id)!;
        const queue = state.queue(run.queue);
        queue.ready.delete(id);
        const ttl = run.fields['leaseTtl'] ? Number(run.fields['leaseTtl']) : state.settings.leaseTtlMs;
        run.lease = {
          token,
          claimedAt: now,
          attempt: Number(run.fields['attempts'] ?? 0) + 1,
          recoveries: Number(run.fields['recoveries'] ?? 0),
          started: 0,
          worker,
          deadline: now + ttl,
        };
        queue.running.set(id, now + ttl);
        queue.countMinute(now, 'started');
        queue.countMinute(now, 'waitMs', Math.max(0, now - Number(run.fields['runAfter'] ?? run.fields['enqueuedAt'])));
        const leased = run.leased();
        // As claim.lua: a rate-limited queue logs the run, which must start within the slack.
        const limit = state.rateLimits.get(run.queue);
        if (limit) {
          state.rateLog(run.queue).push(now);
          leased.startWithinMs = limit.startSlackMs;
        }
        state.groups.leased(run, leased, now);
        // One process, one clock: the slack counts from now on the monotonic clock.
        if (leased.startWithinMs !== undefined) leased.startBy = performance.now() + leased.startWithinMs;
        claimed.push(leased);
      }
      return [ids.length, taken[q]! < orders[q]!.length];
    };
    const active = orders.map((order) => order.length > 0);
    return claimedRuns(claimed, rotateClaim(active, count, offset, lease).next);
  }

  claimWaiter(queues: readonly string[], workerId: string): ClaimWaiter {
    return memoryClaimWaiter(
      this.state.wakeups,
      queues,
      (count, offset) => this.claim(queues, count, workerId, offset),
      (timeoutMs) => this.state.groups.wait(this.state, queues, this.state.rateWait(queues, timeoutMs)),
    );
  }

  async acknowledge(acks: readonly Acknowledgement[], started: readonly LeaseRef[] = []): Promise<boolean[]> {
    const now = this.state.clock.now();
    const applied = acks.map((ack) => applyAcknowledgement(this.state, ack, now));
    this.flows.acknowledged(acks, applied);
    for (const ref of started) this.markStarted(ref, now);
    if (acks.length > 0) this.state.trim([...new Set(acks.map((ack) => ack.queue))], now);
    // As wake.lua: a lease of a capped queue ended, so its idle consumers may lease again.
    for (const queue of new Set(acks.map((ack) => ack.queue))) {
      if (this.state.caps.has(queue) || this.state.groups.any()) this.state.wakeups.wake(queue);
    }
    return applied;
  }

  async announceStart(ref: LeaseRef): Promise<boolean> {
    const run = this.state.runs.get(ref.id);
    if (!leaseHolds(run, ref.token, this.state.clock.now())) return false;
    run.lease!.started = startAnnounced(run.lease!.started);
    return true;
  }

  /** A start mark: the attempt of a lease that holds started (an announced one too). */
  private markStarted(ref: LeaseRef, now: number): void {
    const run = this.state.runs.get(ref.id);
    if (!leaseHolds(run, ref.token, now)) return;
    run.lease!.started = startMarked(run.lease!.started);
  }

  async report(reports: readonly RunReport[]): Promise<boolean[]> {
    const now = this.state.clock.now();
    return reports.map((report) => applyReport(this.state, report, now));
  }

  async release(leases: readonly LeaseRef[]): Promise<boolean[]> {
    const now = this.state.clock.now();
    return leases.map((ref) => {
      const run = this.state.runs.get(ref.id);
      if (!leaseHolds(run, ref.token, now) || !mayHandBack(run.lease!.started)) return false;
      this.handBack(run);
      return true;
    });
  }

  async defer(leases: readonly (LeaseRef & { readonly delayMs: number })[]): Promise<boolean[]> {
    const now = this.state.clock.now();
    return leases.map((ref) => {
      const run = this.state.runs.get(ref.id);
      if (!leaseHolds(run, ref.token, now)) return false;
      // As defer.lua: the attempt is not settled (attempts and errors kept), its expiries' series ends.
      const queue = this.state.queue(run.queue);
      const due = now + Math.round(ref.delayMs);
      run.lease = undefined;
      queue.running.delete(run.id);
      queue.deferred.set(run.id, due);
      run.fields['runAfter'] = String(due);
      delete run.fields['recoveries'];
      this.state.wakeups.wake(BROKER_TOPIC);
      this.state.groups.leaseEnded(this.state, run);
      return true;
    });
  }

  /** A held, never-started run goes back to READY, uncharged. */
  private handBack(run: MemoryRun): void {
    const queue = this.state.queue(run.queue);
    run.lease = undefined;
    queue.running.delete(run.id);
    queue.ready.set(run.id, run.score);
    this.state.wakeups.wake(run.queue);
  }

  async renew(worker: WorkerHeartbeat, recordTtlMs: number, leases: readonly LeaseRenewal[]): Promise<RenewedLease[]> {
    const now = this.state.clock.now();
    this.state.workers.set(worker.id, { record: { ...worker, seenAt: now }, expiresAt: now + recordTtlMs });
    return leases.map((renewal) => {
      const run = this.state.runs.get(renewal.id);
      if (!leaseHolds(run, renewal.token, now)) {
        return renewalAnswer(false, false, this.state.runs.get(renewal.id)?.status);
      }
      run.lease!.deadline = now + renewal.leaseTtlMs;
      this.state.queue(run.queue).running.set(run.id, run.lease!.deadline);
      return renewalAnswer(true, this.state.paused.has(run.queue), run.status);
    });
  }

  async retire(workerId: string): Promise<void> {
    this.state.workers.delete(workerId);
  }

  async workers(): Promise<WorkerRecord[]> {
    const now = this.state.clock.now();
    for (const [id, { expiresAt }] of this.state.workers) if (expiresAt <= now) this.state.workers.delete(id);
    return [...this.state.workers.values()].map(({ record }) => record);
  }

  async ping(): Promise<number> {
    return 0;
  }

  async promote(queues: readonly string[]): Promise<{ now: number; promoted: number; nextDueAt: number | null }> {
    const now = this.state.clock.now();
    let promoted = 0;
    let nextDueAt: number | null = null;
    for (const name of queues) {
      const queue = this.state.queue(name);
      for (const id of queue.ordered('deferred')) {
        const due = queue.deferred.get(id)!;
        if (!isDue(due, now)) {
          nextDueAt = nextDueAt === null ? due : Math.min(nextDueAt, due);
          continue;
        }
        this.promoteRun(id);
        promoted++;
      }
    }
    return { now, promoted, nextDueAt };
  }

  /**
   * Makes a deferred run READY now, whatever its due time (the testing
   * module skips retry backoffs with it); returns false when it is not deferred.
   */
  promoteRun(id: string): boolean {
    const run = this.state.runs.get(id);
    if (!run) return false;
    const queue = this.state.queue(run.queue);
    if (!queue.deferred.delete(id)) return false;
    queue.ready.set(id, run.score);
    // As promote.lua: no consumer is woken for runs of a paused queue.
    if (!this.state.paused.has(run.queue)) this.state.wakeups.wake(run.queue);
    return true;
  }

  async reap(
    queues: readonly string[],
    claimTtlMs: number,
    maxRecoveries: number,
  ): Promise<{ runs: LeasedRun[]; returned: number; nextDeadline: number | null }> {
    const { state } = this;
    const now = state.clock.now();
    const runs: LeasedRun[] = [];
    let returned = 0;
    let nextDeadline: number | null = null;
    const token = state.nextCall();
    for (const name of queues) {
      const queue = state.queue(name);
      // Entries change while iterated (deleted, or updated in place): a Map allows both.
      for (const [id, deadline] of queue.running) {
        const run = state.runs.get(id)!;
        if (holdsAt(deadline, now)) {
          nextDeadline = nextDeadline === null ? deadline : Math.min(nextDeadline, deadline);
          continue;
        }
        const lease = run.lease!;
        const { recoveries, handBack } = expiryOf(lease.started, Number(run.fields['recoveries'] ?? 0), maxRecoveries);
        if (recoveries > 0) run.fields['recoveries'] = String(recoveries);
        if (handBack) {
          this.handBack(run);
          returned++;
          continue;
        }
        // The broker settles it through its retry policy, under the reaper's own claim.
        run.lease = { ...lease, token, recoveries, started: 2, deadline: now + claimTtlMs };
        queue.running.set(id, now + claimTtlMs);
        runs.push(run.leased());
      }
    }
    return { runs, returned, nextDeadline };
  }

  async trim(queues: readonly string[]): Promise<{ removed: number; nextExpiryAt: number | null }> {
    return this.state.trim(queues, this.state.clock.now());
  }

  async load(id: string): Promise<StoredRun | null> {
    return this.state.runs.get(id)?.stored() ?? null;
  }

  async loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    return ids.map((id) => this.state.runs.get(id)?.stored() ?? null);
  }

  async counts(queues: readonly string[]): Promise<QueueCounts[]> {
    return queues.map((name) => {
      const q = this.state.queue(name);
      return {
        queue: name,
        waiting: q.waiting.size,
        ready: q.ready.size,
        deferred: q.deferred.size,
        running: q.running.size,
        successful: q.successful.size,
        failed: q.failed.size,
        quarantined: q.quarantined.size,
        cancelled: q.cancelled.size,
      };
    });
  }

  async list(queue: string, segment: Segment, offset: number, limit: number): Promise<string[]> {
    return this.state
      .queue(queue)
      .ordered(segment)
      .slice(offset, offset + limit);
  }

  async requeue(id: string, queue: string): Promise<{ requeued: boolean; status: string }> {
    const outcome = requeueRun(this.state, id, queue);
    if (!outcome.requeued) return outcome;
    this.state.queue(queue).count('requeued');
    this.state.wakeups.wake(queue);
    await this.pendingListener?.([id]);
    return outcome;
  }

  /** At once: see `requeueSegment`. */
  async requeueAll(queue: string, segment: RequeueableSegment, options: RequeueAllOptions = {}): Promise<number> {
    const ids = requeueSegment(this.state, queue, segment);
    options.onProgress?.({ queue, segment, requeued: ids.length, chunkRequeued: ids.length, done: true });
    if (ids.length > 0) await this.pendingListener?.(ids);
    return ids.length;
  }

  async registerQueues(queues: readonly string[]): Promise<void> {
    for (const queue of queues) this.state.known.add(queue);
  }

  async knownQueues(): Promise<string[]> {
    return [...this.state.known].sort();
  }

  async stats(queue: string): Promise<Record<string, number>> {
    return { ...this.state.queue(queue).stats };
  }

  async metrics(queue: string, minutes: number): Promise<{ now: number; minutes: MinuteMetrics[] }> {
    const now = this.state.clock.now();
    return { now, minutes: this.state.queue(queue).metrics(now, minutes) };
  }

  async readySince(queue: string): Promise<{ now: number; since: number | null }> {
    const now = this.state.clock.now();
    let since: number | null = null;
    for (const id of this.state.queue(queue).ready.keys()) {
      const fields = this.state.runs.get(id)!.fields;
      const at = Number(fields['runAfter'] ?? fields['enqueuedAt']);
      since = since === null ? at : Math.min(since, at);
    }
    return { now, since };
  }

  async cancel(id: string, queue: string): Promise<{ cancelled: boolean; status: string }> {
    const outcome = cancelRun(this.state, id, queue);
    // As cancel.lua: a cancelled flow node's edges apply.
    const readied = outcome.cancelled ? this.flows.settle(id, 'CANCELLED', '') : [];
    if (readied.length > 0) await this.pendingListener?.(readied);
    return outcome;
  }

  async dequeue(id: string, queue: string): Promise<{ removed: boolean; status: string }> {
    const run = this.state.runs.get(id);
    if (!run || run.queue !== queue) return { removed: false, status: '' };
    const q = this.state.queue(queue);
    const status = run.status;
    if (!dequeueable(status)) return { removed: false, status };
    // As dequeue.lua: a dequeued flow node counts as CANCELLED for its flow, and its edges apply.
    const readied = this.flows.settle(id, 'CANCELLED', '');
    this.state.delete(run);
    q.count('dequeued');
    this.state.log.publish({ id, removed: 'dequeued' }, this.state.clock.now());
    if (readied.length > 0) await this.pendingListener?.(readied);
    return { removed: true, status };
  }

  async leases(queue: string): Promise<{ id: string; deadline: number }[]> {
    const q = this.state.queue(queue);
    return q.ordered('running').map((id) => ({ id, deadline: q.running.get(id)! }));
  }

  /** Process memory is not the store's: no figure to report, and no limit (the capacity guard stays quiet). */
  async memory(): Promise<MemoryUsage> {
    return { usedBytes: null, maxBytes: null, datasetBytes: null };
  }

  /**
   * At once: nothing else runs in between, so the one chunk removes exactly
   * what the queue held (the Redis backend's chunks remove the same runs when
   * nothing interleaves).
   */
  async purge(queue: string, options: PurgeOptions = {}): Promise<number> {
    const now = this.state.clock.now();
    const runs = [...this.state.runs.values()].filter((run) => run.queue === queue);
    const readied = this.flows.purging(queue);
    // A node its failure removed already (a failed TTL of 0) is not counted again.
    const removed = runs.filter((run) => this.state.runs.get(run.id) === run);
    for (const run of removed) {
      this.state.delete(run);
      this.state.log.publish({ id: run.id, removed: 'purged' }, now);
    }
    options.onProgress?.({ queue, removed: removed.length, chunkRemoved: removed.length, done: true });
    if (readied.length > 0) await this.pendingListener?.(readied);
    return removed.length;
  }

  async pause(queue: string): Promise<{ pausedAt: number; changed: boolean }> {
    const { paused, known } = this.state;
    const since = paused.get(queue);
    if (since !== undefined) return { pausedAt: since, changed: false };
    const now = this.state.clock.now();
    paused.set(queue, now);
    known.add(queue);
    return { pausedAt: now, changed: true };
  }

  async resume(queue: string): Promise<{ changed: boolean }> {
    const changed = this.state.paused.delete(queue);
    this.state.wakeups.wake(queue);
    // Immediate mode runs what the resume made claimable, as it runs what a store makes pending.
    const ready = [...this.state.queue(queue).ready.keys()];
    if (changed && this.pendingListener && ready.length > 0) await this.pendingListener(ready);
    return { changed };
  }

  async pausedSince(queues: readonly string[]): Promise<(number | null)[]> {
    return queues.map((queue) => this.state.paused.get(queue) ?? null);
  }

  async setConcurrencyCap(queue: string, cap: number | null): Promise<{ previous: number | null }> {
    const { caps, known } = this.state;
    const previous = caps.get(queue) ?? null;
    if (cap === null) caps.delete(queue);
    else caps.set(queue, cap);
    known.add(queue);
    this.state.wakeups.wake(queue);
    return { previous };
  }

  async setRateLimit(queue: string, limit: StoredRateLimit | null): Promise<{ previous: StoredRateLimit | null }> {
    const { rateLimits, known } = this.state;
    const previous = rateLimits.get(queue) ?? null;
    if (limit === null) rateLimits.delete(queue);
    else rateLimits.set(queue, { ...limit });
    known.add(queue);
    this.state.wakeups.wake(queue);
    return { previous };
  }

  async rateLimits(queues: readonly string[]): Promise<(StoredRateLimit | null)[]> {
    return queues.map((queue) => this.state.rateLimits.get(queue) ?? null);
  }

  async setTaskLimit(task: string, limit: StoredTaskLimit | null): Promise<{ previous: StoredTaskLimit | null }> {
    const { limits } = this.state.groups;
    const previous = limits.get(task) ?? null;
    if (limit === null) limits.delete(task);
    else limits.set(task, { ...limit });
    // As task-limit.lua: held runs may have room now.
    for (const queue of this.state.queueNames()) this.state.wakeups.wake(queue);
    return { previous };
  }

  async taskLimits(tasks: readonly string[]): Promise<(StoredTaskLimit | null)[]> {
    return tasks.map((task) => this.state.groups.limits.get(task) ?? null);
  }

  async concurrencyCaps(queues: readonly string[]): Promise<(number | null)[]> {
    return queues.map((queue) => this.state.caps.get(queue) ?? null);
  }

  brokerSignal(): WorkSignal {
    return memoryWorkSignal(this.state.wakeups, BROKER_TOPIC);
  }

  async watch(ids: readonly string[], expiryMs: number): Promise<WatchReply> {
    const now = this.state.clock.now();
    const lastId = this.state.log.lastId;
    const states = ids.map((id) => {
      const run = this.state.runs.get(id);
      if (run?.settled) return run.stored();
      this.state.log.register(id, now + expiryMs);
      return run ? null : ('missing' as const);
    });
    return { lastId, states };
  }

  finishedFeed(onReady: () => void): FinishedFeed {
    return this.state.log.reader(onReady);
  }

  partitionView(): null {
    return null;
  }

  createWaiter(): Waiter {
    return new RunWaiter(this);
  }
}
