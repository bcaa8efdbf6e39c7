import type { Segment } from '../task-backend.js';

/**
 * The key schema of one backend (`docs/storage.md` gives each key's invariant
 * and the scripts that write it). Every key starts with `threadmill:{alias}:`;
 * the braces make `{alias}` the Redis Cluster hash tag, so all keys of a
 * backend live in one slot and every script is single-slot.
 *
 * | key | type | holds |
 * | --- | --- | --- |
 * | `layout` | STRING | the storage layout's version (`lua/upgrade.lua`) |
 * | `upgrade` | HASH | where an unfinished upgrade of the layout is (`lua/upgrade.lua`); gone once it is complete |
 * | `seq` | STRING | counter for FIFO order |
 * | `queues` | SET | names of the backend's queues, registered at boot (for inspectors) |
 * | `broker:wake` | ZSET | marker: new deferred runs or first leases, re-plan the broker's sleep |
 * | `workers` | ZSET | live worker ids by record expiry |
 * | `worker:<id>` | HASH | a worker process's record (heartbeat), expiring |
 * | `run:<id>` | HASH | once an attempt settled (before, the run is a `fresh` record): payload (immutable) beside status, attempts and result fields |
 * | `leases` | HASH | run id → its current lease: `token|claimedAt|attempt|recoveries|started|worker` |
 * | `fresh` | HASH | run id → record of a run no attempt settled yet: `enqueuedAt|score|leaseTtl|runAfter|queue|payload` |
 * | `done` | HASH | run id → record of a run that succeeded in the attempt that took it from `fresh`: `finishedAt|claimedAt|attempt|workerLength|resultLength|<worker><result><fresh record>` |
 * | `q:<queue>:ready` | ZSET | ready run ids by priority, then FIFO (all but the ready list's) |
 * | `q:<queue>:ready-list` | LIST | ids of runs enqueued ready now at priority 0, FIFO (`lua/includes/ready-list.lua`) |
 * | `q:<queue>:withdrawn` | HASH | tombstones of the ready list: run id → dead places (runs dequeued from it), '' → total |
 * | `q:<queue>:deferred` | ZSET | deferred run ids by due time |
 * | `q:<queue>:running` | ZSET | leased run ids by lease deadline |
 * | `q:<queue>:successful` | LIST | ids of successful runs kept for the default TTL, in finish order (`lua/includes/successful-index.lua`); entry and run (`done` record or run hash) removed together after resultTtlMs |
 * | `q:<queue>:failed` | ZSET | failed run ids kept for the default TTL, by finish time; entry and run hash removed together after resultTtlMs |
 * | `q:<queue>:successful:<ttl>`, `q:<queue>:failed:<ttl>` | LIST, ZSET | the same for the runs of tasks whose own result TTL is `<ttl>` ms: one index per TTL class (`lua/includes/result-classes.lua`) |
 * | `q:<queue>:result-classes` | SET | the TTL classes of a queue's finished indexes that may hold runs: `successful:<ttl>`, `failed:<ttl>` |
 * | `q:<queue>:quarantined` | ZSET | quarantined run ids by quarantine time, never trimmed |
 * | `q:<queue>:cancelled` | ZSET | cancelled run ids by finish time; entry and run hash removed together after the failed resultTtlMs (`lua/cancel.lua`) |
 * | `q:<queue>:dedupe:<key>` | STRING | a deduplication key: `firstAt|holdMs|releaseOn|runId`, the run it holds; expires a day after its hold (`lua/includes/dedupe.lua`) |
 * | `q:<queue>:wake` | ZSET | marker: ready runs are waiting (idle workers block on it) |
 * | `q:<queue>:paused` | STRING | the queue's pause flag: when it was paused (epoch ms); claims skip the queue while it exists (`lua/pause.lua`) |
 * | `q:<queue>:rate` | STRING | the queue's rate limit `max\|perMs\|slackMs` (`lua/rate.lua`) |
 * | `q:<queue>:starts` | ZSET | the queue's rate log: one entry per run leased, by claim time; at most `max` entries |
 * | `q:<queue>:cap` | STRING | the queue's concurrency cap: claims lease a run of it only while its running set is smaller (`lua/cap.lua`) |
 * | `task-limits` | HASH | task → its limit `max\|perMs\|slackMs\|concurrency`, per limit group (`lua/task-limit.lua`) |
 * | `q:<queue>:grouped` | STRING | flag: the queue holds runs of limit groups (its claims look for groups) |
 * | `q:<queue>:groups` | ZSET | the queue's limit groups with parked runs or leases → when a claim should look at each again |
 * | `q:<queue>:group:held:<group>` | ZSET | a limit group's parked runs by ready score (`lua/includes/limit-groups.lua`) |
 * | `q:<queue>:group:running:<group>` | SET | a limit group's leased runs (pruned by claims against the queue's running set) |
 * | `q:<queue>:group:starts:<group>` | ZSET | a limit group's rate log, `<call id>#<run id>` → claim time |
 * | `q:<queue>:parked` | STRING | how many of the queue's runs are parked (counted as ready) |
 * | `consumer:<worker>:wake` | ZSET | marker that ends a consumer's blocked wait when it stops (expires within a minute) |
 * | `last-call:<sender>:<slot>` | STRING | the record of a recent claim, acknowledge, requeue, dequeue or purge call of a backend instance, for ten minutes: a resent copy recognises itself (`lua/includes/call-record.lua`) |
 * | `q:<queue>:stats` | HASH | counters: enqueued, succeeded, failed, retried, quarantined, staleAcks, requeued, dequeued, cancelled |
 * | `q:<queue>:metrics:<minute>` | HASH | one minute's counts (enqueued, started, waitMs, outcomes); expires after 2 h |
 * | `waiting` | ZSET | run id → registration expiry: runs somebody waits on (`lua/watch.lua`) |
 * | `finished` | STREAM | one entry per registered run that settled or was removed, kept a minute (`lua/includes/finished.lua`) |
 * | `schedules` | ZSET | schedule id → next due time (0: to plan, +inf: none) (`docs/schedules.md`) |
 * | `code-schedules` | SET | ids of schedules declared in code (`lua/schedule-declare.lua`) |
 * | `schedule:<id>` | HASH | a schedule: definition, digest, source, next slot, runs, last slot and run, code declarations (`lua/schedule-declare.lua`) |
 */
export class RedisKeys {
  readonly prefix: string;
  readonly layout: string;
  /** Where an upgrade of the layout in chunks is, while it is unfinished. */
  readonly upgrade: string;
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
  /**
   * Runs that succeeded in the attempt that took them from {@link fresh}, as
   * one field each (see `lua/includes/done.lua`): keeping a result writes a
   * field of a hash that exists instead of a run hash of its own.
   */
  readonly done: string;
  /**
   * Runs somebody waits on (`TaskQueue.waitFor`), by registration expiry: the
   * scripts that settle or remove one of them publish it to {@link finished}.
   */
  readonly waiting: string;
  /** Entries of registered runs that settled or were removed, read by waiting processes. */
  readonly finished: string;
  /** Prefix of run keys, passed to scripts that derive run keys from popped ids. */
  readonly runPrefix: string;
  /** Prefix of per-queue keys, for the upgrade script, which derives retired keys of the registered queues. */
  readonly queuePrefix: string;
  /** Prefix of flow hashes (`flow:<id>`), passed to scripts that derive them from a node's `flow` field. */
  readonly flowPrefix: string;
  /** Schedule id → next due time (0: to plan, +inf: none): every schedule's (`docs/schedules.md`). */
  readonly schedules: string;
  /** Task → its limit, `max|perMs|slackMs|concurrency` (`lua/task-limit.lua`). */
  readonly taskLimits: string;
  /** Prefix of schedule hashes (`schedule:<id>`), passed to scripts that derive them from ids. */
  readonly schedulePrefix: string;
  /** Ids of schedules declared in code: what a declaration looks through, rather than every schedule. */
  readonly codeSchedules: string;

  constructor(readonly alias: string) {
    this.prefix = `threadmill:{${alias}}:`;
    this.layout = `${this.prefix}layout`;
    this.upgrade = `${this.prefix}upgrade`;
    this.seq = `${this.prefix}seq`;
    this.queues = `${this.prefix}queues`;
    this.brokerWake = `${this.prefix}broker:wake`;
    this.workers = `${this.prefix}workers`;
    this.leases = `${this.prefix}leases`;
    this.fresh = `${this.prefix}fresh`;
    this.done = `${this.prefix}done`;
    this.waiting = `${this.prefix}waiting`;
    this.finished = `${this.prefix}finished`;
    this.runPrefix = `${this.prefix}run:`;
    this.queuePrefix = `${this.prefix}q:`;
    this.flowPrefix = `${this.prefix}flow:`;
    this.schedules = `${this.prefix}schedules`;
    this.taskLimits = `${this.prefix}task-limits`;
    this.schedulePrefix = `${this.prefix}schedule:`;
    this.codeSchedules = `${this.prefix}code-schedules`;
  }

  /** The marker that ends consumer `workerId`'s blocked wait when it stops. */
  consumerWake(workerId: string): string {
    return `${this.prefix}consumer:${workerId}:wake`;
  }

  /**
   * Slot `slot` of the records of backend instance `sender`'s recent calls,
   * which a resent copy of such a call reads (see `lua/includes/call-record.lua`).
   */
  lastCall(sender: string, slot: number): string {
    return `${this.prefix}last-call:${sender}:${slot}`;
  }

  /** Flow `id`'s hash: its counts, state, and per node its name, queue and first outcome (`lua/includes/flow-settle.lua`). */
  flow(id: string): string {
    return `${this.flowPrefix}${id}`;
  }

  /** A queue's WAITING flow nodes, by enqueue time. */
  flowWaiting(queue: string): string {
    return `${this.prefix}q:${queue}:waiting`;
  }

  /** Set once a queue got flow nodes: settling its runs then looks for their flows. */
  flowed(queue: string): string {
    return `${this.prefix}q:${queue}:flowed`;
  }

  /** Schedule `id`'s hash: its definition, next slot, history and declarations. */
  schedule(id: string): string {
    return `${this.schedulePrefix}${id}`;
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

  /**
   * The TTL classes (`successful:<ttl>`, `failed:<ttl>`) whose finished index
   * of `queue` may hold runs: every reader of a finished index reads them all.
   */
  resultClasses(queue: string): string {
    return `${this.prefix}q:${queue}:result-classes`;
  }

  /** The finished index of TTL class `member` (`successful:<ttl>`, `failed:<ttl>`) of `queue`. */
  resultClass(queue: string, member: string): string {
    return `${this.prefix}q:${queue}:${member}`;
  }

  cancelled(queue: string): string {
    return `${this.prefix}q:${queue}:cancelled`;
  }

  quarantined(queue: string): string {
    return `${this.prefix}q:${queue}:quarantined`;
  }

  /** The sorted set of a queue's segment. */
  segment(queue: string, segment: Segment): string {
    return `${this.prefix}q:${queue}:${segment}`;
  }

  /** A queue's pause flag: claims skip the queue while it exists (`lua/pause.lua`). */
  paused(queue: string): string {
    return `${this.prefix}q:${queue}:paused`;
  }

  /** A queue's concurrency cap: claims lease its runs only while its running set is smaller (`lua/cap.lua`). */
  cap(queue: string): string {
    return `${this.prefix}q:${queue}:cap`;
  }

  /** A queue's rate limit, `max|perMs|slackMs` (`lua/rate.lua`). */
  rate(queue: string): string {
    return `${this.prefix}q:${queue}:rate`;
  }

  /** A queue's rate log: one entry per run leased, by claim time (`lua/claim.lua`). */
  starts(queue: string): string {
    return `${this.prefix}q:${queue}:starts`;
  }

  /** A queue's flag: it holds runs of limit groups, so its claims look for groups (`lua/includes/claim-groups.lua`). */
  grouped(queue: string): string {
    return `${this.prefix}q:${queue}:grouped`;
  }

  /** A queue's limit groups with parked runs or leases, by when a claim should look at each again. */
  groups(queue: string): string {
    return `${this.prefix}q:${queue}:groups`;
  }

  /** The prefix of every key of `queue` (`q:<queue>:`): scripts of many queues derive the queue's keys from it. */
  keyPrefix(queue: string): string {
    return `${this.queuePrefix}${queue}:`;
  }

  /** The prefix of a queue's limit groups' keys (`<prefix>held:<group>`, `running:`, `starts:`). */
  groupPrefix(queue: string): string {
    return `${this.prefix}q:${queue}:group:`;
  }

  /** One key of limit group `group` of `queue`: its parked runs, leased runs or rate log. */
  group(queue: string, kind: 'held' | 'running' | 'starts', group: string): string {
    return `${this.groupPrefix(queue)}${kind}:${group}`;
  }

  /** How many of a queue's runs are parked in their limit groups' held sets. */
  parked(queue: string): string {
    return `${this.prefix}q:${queue}:parked`;
  }

  /** A deduplication key of `queue` (`lua/includes/dedupe.lua`): `firstAt|holdMs|releaseOn|runId`. */
  dedupe(queue: string, key: string): string {
    return `${this.prefix}q:${queue}:dedupe:${key}`;
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
