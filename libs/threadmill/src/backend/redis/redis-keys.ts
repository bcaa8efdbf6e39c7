import type { Segment } from '../task-backend.js';

/**
 * The key schema of one backend. Every key starts with `threadmill:{alias}:`;
 * the braces make `{alias}` the Redis Cluster hash tag, so all keys of a
 * backend live in one slot and every script is single-slot.
 *
 * | key | type | holds |
 * | --- | --- | --- |
 * | `seq` | STRING | counter for FIFO order and lease tokens |
 * | `queues` | SET | names of the backend's queues, registered at boot (for inspectors) |
 * | `broker:wake` | ZSET | marker: new deferred runs or first leases, re-plan the broker's sleep |
 * | `workers` | ZSET | live worker ids by record expiry |
 * | `worker:<id>` | HASH | a worker process's record (heartbeat), expiring |
 * | `run:<id>` | HASH | once an attempt settled (before, the run is a `fresh` record): payload (immutable) beside status, attempts and result fields |
 * | `leases` | HASH | run id → its current lease: `token|claimedAt|attempt|recoveries|worker` |
 * | `fresh` | HASH | run id → record of a run no attempt settled yet: `enqueuedAt|score|leaseTtl|runAfter|queue|payload` |
 * | `q:<queue>:ready` | ZSET | ready run ids by priority, then FIFO (all but the ready list's) |
 * | `q:<queue>:ready-list` | LIST | ids of runs enqueued ready now at priority 0, FIFO (`lua/includes/ready-list.lua`) |
 * | `q:<queue>:withdrawn` | HASH | tombstones of the ready list: run id → dead places (runs dequeued from it), '' → total |
 * | `q:<queue>:deferred` | ZSET | deferred run ids by due time |
 * | `q:<queue>:running` | ZSET | leased run ids by lease deadline |
 * | `q:<queue>:successful` / `:failed` | ZSET | finished run ids by finish time, trimmed to resultTtlMs |
 * | `q:<queue>:quarantined` | ZSET | quarantined run ids by quarantine time, never trimmed |
 * | `q:<queue>:wake` | ZSET | marker: ready runs are waiting (idle workers block on it) |
 * | `q:<queue>:idle` | ZSET | consumers whose last claim came back short, by registration time: an enqueue hands them a run directly |
 * | `inbox:<worker>` | ZSET | runs leased to an idle consumer by an enqueue, waiting for it to pick them up (its blocked wait includes it) |
 * | `last-claim:<worker>` | STRING | the consumer's latest claim, for a default lease: a resent copy of that claim hands the first copy's runs over (`lua/claim.lua`) |
 * | `last-call:<sender>:<slot>` | STRING | the reply of a recent acknowledge, requeue, dequeue or purge call of a backend instance, for ten minutes: a resent copy answers the same (`lua/includes/call-record.lua`) |
 * | `q:<queue>:stats` | HASH | counters: enqueued, succeeded, failed, retried, quarantined, staleAcks, requeued, dequeued |
 * | `q:<queue>:metrics:<minute>` | HASH | one minute's counts (enqueued, started, waitMs, outcomes); expires after 2 h |
 */
export class RedisKeys {
  readonly prefix: string;
  readonly seq: string;
  readonly queues: string;
  readonly brokerWake: string;
  readonly workers: string;
  /**
   * The current lease of every leased run, in one hash: a claim writes and an
   * acknowledgement checks and removes a whole batch of leases in one call
   * each, instead of one call per run hash.
   */
  readonly leases: string;
  /**
   * Runs no attempt has settled yet, as one field each (see
   * `lua/includes/fresh.lua`): storing, claiming and deleting a batch of them
   * is one call each instead of one per run hash.
   */
  readonly fresh: string;
  /** Prefix of run keys, passed to scripts that derive run keys from popped ids. */
  readonly runPrefix: string;
  /** Prefix of per-queue keys, for scripts that derive an idle consumer's other queues' keys. */
  readonly queuePrefix: string;
  /** Prefix of consumer inboxes, for scripts that derive an idle consumer's inbox from its id. */
  readonly inboxPrefix: string;

  constructor(readonly alias: string) {
    this.prefix = `threadmill:{${alias}}:`;
    this.seq = `${this.prefix}seq`;
    this.queues = `${this.prefix}queues`;
    this.brokerWake = `${this.prefix}broker:wake`;
    this.workers = `${this.prefix}workers`;
    this.leases = `${this.prefix}leases`;
    this.fresh = `${this.prefix}fresh`;
    this.runPrefix = `${this.prefix}run:`;
    this.queuePrefix = `${this.prefix}q:`;
    this.inboxPrefix = `${this.prefix}inbox:`;
  }

  /** The inbox of consumer `workerId` (its id JSON-encoded, as leases record it). */
  inbox(workerId: string): string {
    return this.inboxPrefix + JSON.stringify(workerId);
  }

  /** Consumer `workerId`'s latest claim, which a replay of that claim reads (see `lua/claim.lua`). */
  lastClaim(workerId: string): string {
    return `${this.prefix}last-claim:${JSON.stringify(workerId)}`;
  }

  /**
   * Slot `slot` of the records of backend instance `sender`'s recent calls,
   * which a resent copy of such a call reads (see `lua/includes/call-record.lua`).
   */
  lastCall(sender: string, slot: number): string {
    return `${this.prefix}last-call:${sender}:${slot}`;
  }

  idle(queue: string): string {
    return `${this.prefix}q:${queue}:idle`;
  }

  worker(id: string): string {
    return `${this.prefix}worker:${id}`;
  }

  run(id: string): string {
    return this.runPrefix + id;
  }

  ready(queue: string): string {
    return `${this.prefix}q:${queue}:ready`;
  }

  /**
   * Runs enqueued ready now at priority 0 wait here in enqueue order, which
   * is their ready order: an RPUSH costs Redis a fraction of a ZADD. Claims
   * merge it with the ready set by score.
   */
  readyList(queue: string): string {
    return `${this.prefix}q:${queue}:ready-list`;
  }

  /** Tombstones of a queue's ready list: runs dequeued from it, left in place. */
  withdrawn(queue: string): string {
    return `${this.prefix}q:${queue}:withdrawn`;
  }

  deferred(queue: string): string {
    return `${this.prefix}q:${queue}:deferred`;
  }

  running(queue: string): string {
    return `${this.prefix}q:${queue}:running`;
  }

  successful(queue: string): string {
    return `${this.prefix}q:${queue}:successful`;
  }

  failed(queue: string): string {
    return `${this.prefix}q:${queue}:failed`;
  }

  quarantined(queue: string): string {
    return `${this.prefix}q:${queue}:quarantined`;
  }

  /** The sorted set of a queue's segment. */
  segment(queue: string, segment: Segment): string {
    return `${this.prefix}q:${queue}:${segment}`;
  }

  wake(queue: string): string {
    return `${this.prefix}q:${queue}:wake`;
  }

  /** Prefix of a queue's per-minute metrics buckets (`<prefix><epoch minute>`). */
  metrics(queue: string): string {
    return `${this.prefix}q:${queue}:metrics:`;
  }

  stats(queue: string): string {
    return `${this.prefix}q:${queue}:stats`;
  }
}
