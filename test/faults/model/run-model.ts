import type { Segment } from '../../../libs/threadmill/src/backend/task-backend.js';
import { leaseHolds, type StartFlag } from '../../../libs/threadmill/src/rules/lease-rules.js';
import {
  inRateWindow,
  isDue,
  keptFor,
  pastTtl,
  readyScore,
  roomUnder,
  settled,
} from '../../../libs/threadmill/src/rules/run-rules.js';
import { emptyFlows, type FlowModel, type FlowSnapshot } from './flow-model.js';

/**
 * The model of the run state machine that the model-based test drives the
 * real scripts against: what every run of a backend should be, per
 * `docs/storage.md`, computed without Redis. Its rules are the library's
 * executable specification (`libs/threadmill/src/rules/`), the ones the
 * in-memory backend runs; what the model adds is the Redis layout they act
 * on (parked runs, finished indexes by TTL class, freed groups), races,
 * replays and restores.
 *
 * Times are absolute epoch ms on the Redis clock, mirroring the scores the
 * scripts compare with `now`: lease deadlines, due times and finish times.
 * The test cannot set Redis's clock, so it keeps every such time far (at
 * least {@link MARGIN_MS}) from `now`: the few seconds a sequence takes never
 * decide an outcome, and a clock step is a shift of every time by a multiple
 * of 45 minutes, which no base time below is.
 */

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
/** The backend's lease length: 30 minutes, so a 45-minute clock step expires a lease and does not hit it. */
export const LEASE_TTL_MS = 30 * MINUTE;
/** The model's two tasks: one retried at once after a lost lease, one with no retry policy (FAILED then). */
export const TASK = 'Model.task';
export const TASK_ONCE = 'Model.once';

/** Which task a run of this id runs: fixed by the id, so a run enqueued again under it runs the same task. */
export function taskOf(id: string): typeof TASK | typeof TASK_ONCE {
  let sum = 0;
  for (let i = 0; i < id.length; i++) sum += id.charCodeAt(i);
  return sum % 2 === 0 ? TASK : TASK_ONCE;
}

/**
 * The backend's result TTLs, one per outcome (`resultTtlMs: { successful,
 * failed }`): successes 2 h, failures 100 minutes. `TASK` declares its
 * success TTL equal to the default (its runs stay in the default class);
 * `TASK_ONCE` its own for both outcomes (its runs go to indexes of their TTL
 * class). No TTL is within {@link MARGIN_MS} of a multiple of 45 minutes, so
 * no clock step brings an expiry too close to call.
 */
export const RESULT_TTLS = { successful: 2 * HOUR, failed: 100 * MINUTE } as const;
export const TASK_RESULT_TTLS = {
  [TASK]: { successful: RESULT_TTLS.successful },
  [TASK_ONCE]: { successful: 4 * HOUR, failed: 75 * MINUTE },
} as const;
/** How far a deferred run (or a retry with a delay) is due: only a step or "make due" brings it. */
export const DEFER_MS = HOUR;
/** What "make trimmable" takes off a finish time beyond the run's TTL: past it by 15 minutes. */
export const PAST_RESULT_TTL_MS = 15 * MINUTE;

/** A finished run's outcome: which of its queue's finished indexes it is in. */
export type FinishedStatus = 'successful' | 'failed';

/** How long finished run `run` is kept: its task's TTL for its outcome, or the backend's. */
export function ttlOf(run: Pick<ModelRun, 'id'>, status: FinishedStatus): number {
  const own: { successful?: number; failed?: number } = TASK_RESULT_TTLS[taskOf(run.id)];
  return keptFor(status, RESULT_TTLS, own[status]);
}

/**
 * The TTL class of a finished run (`successful:<ttl>`, `failed:<ttl>`: the
 * suffix of its index key), or undefined for its outcome's default index.
 */
export function classOf(run: Pick<ModelRun, 'id'>, status: FinishedStatus): string | undefined {
  const ttl = ttlOf(run, status);
  return ttl === RESULT_TTLS[status] ? undefined : `${status}:${ttl}`;
}
/** Lease expiries in a row after which the broker quarantines a run. */
export const MAX_RECOVERIES = 2;
/** No time the model compares with `now` may be closer to it than this. */
export const MARGIN_MS = 5 * MINUTE;

export const QUEUES = ['q1', 'q2'] as const;
export type QueueName = (typeof QUEUES)[number];
/** The consumers (worker ids) that claim; leases record them. */
export const CONSUMERS = ['host-a:1:0', 'host-b:2:0'] as const;
export { SEGMENTS } from '../../../libs/threadmill/src/records/backend-records.js';

/** Where a run is; `ready` and `deferred` both read as READY. */
export type RunStatus = Segment;

/** The status a reader sees (`load`, `requeue`, `dequeue`). */
export const STATUS_TEXT: Record<RunStatus, string> = {
  waiting: 'WAITING',
  ready: 'READY',
  deferred: 'READY',
  running: 'RUNNING',
  successful: 'SUCCESSFUL',
  failed: 'FAILED',
  quarantined: 'QUARANTINED',
  cancelled: 'CANCELLED',
};

/** The lease a running run holds. */
export interface ModelLease {
  readonly token: string;
  readonly worker: string;
  /** The attempt it grants: the run's charged attempts + 1. */
  readonly attempt: number;
  deadline: number;
  /**
   * Its started flag: 0 held, 1 its start recorded (a start mark, or an
   * outcome: an expiry charges it), 3 a suspect announced its start (an
   * expiry counts a recovery, no attempt, until MAX_RECOVERIES).
   */
  flag: StartFlag;
}

export interface ModelRun {
  readonly id: string;
  readonly queue: QueueName;
  readonly priority: number;
  /** Its place in enqueue order (the `seq` part of its ready score), kept for life. */
  readonly seq: number;
  status: RunStatus;
  lease?: ModelLease;
  dueAt?: number;
  finishedAt?: number;
  /** Its place in the order runs succeeded: the order of its queue's successful list. */
  finishedSeq?: number;
  /** Attempts settled: outcomes applied, and expiries of started attempts. Redis's `attempts`. */
  charged: number;
  /** Attempts known to have started: start recorded, or an outcome applied (it ran). */
  started: number;
  /** Lease expiries in a row. */
  recoveries: number;
  /** The latest progress JSON an attempt reported under a lease that held (`report`). */
  progress?: string;
  /** The log lines attempts reported, the last `MAX_LOG_LINES`; undefined until one was. */
  logs?: string[];
  /** Its limit group (`<task>` or `<task>\n<key>`), when enqueued as a run of one: a run hash, in the ready ZSET. */
  readonly group?: string;
  /** READY, parked by a claim in its group's held set (`lua/includes/claim-groups.lua`), not in the ready ZSET. */
  parked?: boolean;
}

/** A task's limit in the model (`task-limit.lua`): `max` runs per {@link RATE_WINDOW_MS}, and/or a concurrency. */
export interface ModelTaskLimit {
  readonly max?: number;
  readonly concurrency?: number;
}

/** A lease as its holder knows it: current or superseded. */
export interface LeaseRef {
  readonly id: string;
  readonly queue: QueueName;
  readonly token: string;
}

/** A queue's lifetime counters (`stats`): enqueued, succeeded, failed, retried, staleAcks... */
export type QueueStats = Record<string, number>;

export interface RunModel {
  runs: Map<string, ModelRun>;
  /** Per queue: each call counts once, even when its reply was lost and ioredis resent it. */
  stats: Record<QueueName, QueueStats>;
  /** The last `seq` handed out (Redis's `seq` key). */
  seq: number;
  /** The model's id counter: never rolled back, so a new id is new even after a restore. */
  nextId: number;
  /** Every id ever stored, in order: those without a run are free to enqueue again. */
  ids: string[];
  /** The queue each id was last stored into (to count ids reused across queues). */
  lastQueue: Map<string, QueueName>;
  /** Every lease ever granted, current or superseded; a restore does not forget them. */
  leases: LeaseRef[];
  /** Every lease token ever granted: a new lease must carry a token never seen. */
  tokens: Set<string>;
  /** Runs registered for waiting (`watch`), pending still: their settling or removal is published. */
  watched: Set<string>;
  /** Paused queues (`pause.lua`): claims take none of their runs. */
  paused: Set<QueueName>;
  /** Concurrency caps (`cap.lua`): claims lease a run only while fewer of the queue's are running. */
  caps: Map<QueueName, number>;
  /** Rate limits' `max` (`rate.lua`, over {@link RATE_WINDOW_MS}): claims lease at most that many per window. */
  rateLimits: Map<QueueName, number>;
  /** Per queue, the claim times of its rate log's entries (`q:<queue>:starts`), in the model's clock. */
  rateLog: Map<QueueName, number[]>;
  /** Deduplication keys, by `queue key` (see `dedupe-commands.ts`). */
  dedupe: Map<string, ModelDedupeKey>;
  /** Task limits by task (`task-limits`): claims lease a run of a group only while the group has room. */
  taskLimits: Map<string, ModelTaskLimit>;
  /** Per `<queue>\t<group>`, the claim times of its rate log's entries (`q:<queue>:group:starts:<group>`). */
  groupLogs: Map<string, number[]>;
  /** Queues whose `grouped` flag is set: a run of a limit group was enqueued into them since their last purge. */
  grouped: Set<QueueName>;
  /**
   * Per `<queue>\t<group>`, the groups a lease of which ended since a claim of the queue last looked at its
   * groups: while one holds parked runs and has room, Redis shows it due at once (score 0 in `q:<queue>:groups`).
   */
  freedGroups: Set<string>;
  /** Transitions of the step under way, for the tally (drained after each step). */
  notes: string[];
  /** What the scripts of the step under way must have published to `finished`: `<id> <STATUS>` or `<id> removed:<how>`. */
  published: string[];
  /** Schedules by id (`model/schedule-commands.ts`). */
  schedules: Map<string, ModelSchedule>;
  /** Flows and their nodes, in the flow queues (`model/flow-model.ts`). */
  flows: FlowModel;
  /** The runs, `seq`, counters, registrations and schedules as the last Redis snapshot holds them. */
  snapshot?: {
    runs: Map<string, ModelRun>;
    seq: number;
    stats: Record<QueueName, QueueStats>;
    watched: Set<string>;
    paused: Set<QueueName>;
    dedupe: Map<string, ModelDedupeKey>;
    schedules: Map<string, ModelSchedule>;
    caps: Map<QueueName, number>;
    rateLimits: Map<QueueName, number>;
    rateLog: Map<QueueName, number[]>;
    taskLimits: Map<string, ModelTaskLimit>;
    groupLogs: Map<string, number[]>;
    grouped: Set<QueueName>;
    flows: FlowSnapshot;
  };
}

/**
 * The window of the model's rate limits: no sum of clock steps (multiples of
 * 15 minutes) lands within minutes of it, so no entry is near its edge.
 */
export const RATE_WINDOW_MS = 10 * 3_600_000 + 7 * 60_000;

/** A deduplication key as `lua/includes/dedupe.lua` stores it: the run it names, and how it holds. */
export interface ModelDedupeKey {
  readonly runId: string;
  /** The Redis time of the enqueue that stored the run (within seconds, for a call whose reply was lost). */
  firstAt: number;
  readonly holdMs: number;
  readonly releaseOn: 's' | 'f';
}

/** A schedule as the fire script keeps it: its version, next slot and history, and how often each slot fired. */
export interface ModelSchedule {
  readonly id: string;
  queue: QueueName;
  /** The definition in force; '' while stopped. */
  digest: string;
  /** `'code'`: declared by processes (`forms`); `'api'`: upserted. */
  source: 'code' | 'api';
  /** A code schedule's declared forms (digests, '-' for "not in the code"), in the order first seen. */
  forms: string[];
  /** A code schedule whose form in force is '-': no definition, not listed, never due. */
  stopped: boolean;
  overlap: boolean;
  limit: number;
  /** The stored next slot: '' to plan, 'end', or epoch ms. */
  next: string;
  runs: number;
  skipped: number;
  lastRun?: string;
  lastSlot?: number;
  /** Runs fired per slot: the oracle, which must never exceed 1. */
  fired: Map<number, number>;
}

export function emptyModel(): RunModel {
  return {
    runs: new Map(),
    stats: { q1: {}, q2: {} },
    seq: 0,
    nextId: 0,
    ids: [],
    lastQueue: new Map(),
    leases: [],
    tokens: new Set(),
    watched: new Set(),
    paused: new Set(),
    caps: new Map(),
    rateLimits: new Map(),
    rateLog: new Map(),
    dedupe: new Map(),
    published: [],
    schedules: new Map(),
    taskLimits: new Map(),
    groupLogs: new Map(),
    grouped: new Set(),
    freedGroups: new Set(),
    notes: [],
    flows: emptyFlows(),
  };
}

/** The ids of the finished runs kept in the index of a TTL class (not their outcome's default). */
export function classedIds(model: RunModel): string[] {
  return [...model.runs.values()]
    .filter((run) => (run.status === 'successful' || run.status === 'failed') && classOf(run, run.status))
    .map((run) => run.id);
}

/** A deep copy: a race tries each order of its calls on a copy. */
export function cloneModel(model: RunModel): RunModel {
  return structuredClone(model);
}

/**
 * A registered run settled (SUCCESSFUL, FAILED, QUARANTINED or CANCELLED) or left: the
 * script publishes it, once, and its registration ends.
 */
export function publishIfWatched(model: RunModel, run: ModelRun, removed?: 'dequeued' | 'purged'): void {
  if (!model.watched.has(run.id)) return;
  if (removed === undefined && !isSettled(run)) return;
  model.watched.delete(run.id);
  model.published.push(`${run.id} ${removed === undefined ? STATUS_TEXT[run.status] : `removed:${removed}`}`);
}

/** Whether `run` settled for good (until an operator requeues it): nothing more happens to it by itself. */
export function isSettled(run: Pick<ModelRun, 'status'>): boolean {
  return settled(STATUS_TEXT[run.status]);
}

/** Replaces `model`'s state by `other`'s (the order of a race that happened). */
export function adopt(model: RunModel, other: RunModel): void {
  Object.assign(model, other);
}

/**
 * Whether `time` is past at `now`. Throws when the two are too close to
 * call: the test keeps every time far from `now`, so that a slow machine
 * never turns an outcome.
 */
export function isPast(time: number, now: number): boolean {
  return apart(time, now) < now;
}

/**
 * `time`, checked to be far from `now` (it throws when the two are too close
 * to call), for a rule to compare with `now`.
 */
export function apart(time: number, now: number): number {
  if (Math.abs(time - now) < MARGIN_MS) {
    throw new Error(`A time ${time - now} ms from now is too close to call: the test's times must stay apart.`);
  }
  return time;
}

/** Whether a finished run kept `ttlMs` from `finishedAt` is past its TTL now (its edge far from now). */
export function pastTtlAt(finishedAt: number, ttlMs: number, now: number): boolean {
  apart(finishedAt + ttlMs, now);
  return pastTtl(finishedAt, ttlMs, now);
}

/** Whether a deferred run due at `dueAt` is due now (its due time far from now). */
export function dueAt(due: number, now: number): boolean {
  return isDue(apart(due, now), now);
}

/** Whether a lease with `deadline` expired now (its deadline far from now). */
export function expiredAt(deadline: number, now: number): boolean {
  return !leaseHolds(apart(deadline, now), now);
}

/** Adds `n` to a counter of `queue`. */
export function addCount(model: RunModel, queue: QueueName, counter: string, n = 1): void {
  if (n !== 0) model.stats[queue][counter] = (model.stats[queue][counter] ?? 0) + n;
}

/** Whether `lease` is the current, unexpired lease of its run. */
export function holds(model: RunModel, lease: LeaseRef, now: number): boolean {
  const run = model.runs.get(lease.id);
  if (run?.queue !== lease.queue || run.status !== 'running') return false;
  return run.lease!.token === lease.token && !expiredAt(run.lease!.deadline, now);
}

/** The ready runs of `queue`, parked ones included, in ready order: priority first, then enqueue order. */
export function readyIds(model: RunModel, queue: QueueName): string[] {
  return [...model.runs.values()]
    .filter((run) => run.queue === queue && run.status === 'ready')
    .sort((a, b) => scoreOf(a) - scoreOf(b))
    .map((run) => run.id);
}

/** A run's ready score, as `enqueue.lua` computes it: -priority × 2^44 + seq. */
export function scoreOf(run: Pick<ModelRun, 'priority' | 'seq'>): number {
  return readyScore(run.priority, run.seq);
}

/** The ready runs of `queue` in its ready structures (not parked), in ready order. */
export function unparkedIds(model: RunModel, queue: QueueName): string[] {
  return readyIds(model, queue).filter((id) => !model.runs.get(id)!.parked);
}

/** How many runs of `queue` a claim may lease now under its cap and rate limit (Infinity: neither). */
export function roomOf(model: RunModel, queue: QueueName): number {
  const limits = { concurrency: model.caps.get(queue), max: model.rateLimits.get(queue) };
  return roomUnder(limits, runsIn(model, queue, 'running').length, rateLogOf(model, queue).length);
}

/** The rate log of `queue`, its entries out of the window dropped (as `claim.lua` drops them). */
export function rateLogOf(model: RunModel, queue: QueueName): number[] {
  const log = inWindow(model.rateLog.get(queue) ?? []);
  model.rateLog.set(queue, log);
  return log;
}

/** The entries of a rate log still in {@link RATE_WINDOW_MS} now. */
export function inWindow(log: readonly number[]): number[] {
  const now = Date.now();
  return log.filter((at) => {
    apart(at + RATE_WINDOW_MS, now); // an entry never leaves the window within a sequence's seconds
    return inRateWindow(at, now, RATE_WINDOW_MS);
  });
}

export function runsIn(model: RunModel, queue: QueueName, status: RunStatus): ModelRun[] {
  return [...model.runs.values()].filter((run) => run.queue === queue && run.status === status);
}

/** Runs in any of `statuses`, in a stable order for picks. */
export function runsWith(model: RunModel, ...statuses: RunStatus[]): ModelRun[] {
  return [...model.runs.values()].filter((run) => statuses.includes(run.status));
}

/**
 * Ids stored once whose run is gone (dequeued, purged, trimmed, forgotten by a
 * restore); not those of deduplicated runs, whose ids Threadmill generates.
 */
export function freeIds(model: RunModel): string[] {
  return model.ids.filter((id) => !model.runs.has(id) && !isDedupeId(id));
}

/** The ids the model gives runs enqueued with a dedupe key (generated, never chosen again). */
export function isDedupeId(id: string): boolean {
  return id.startsWith('dd');
}

/** How the holder of a running run's lease names it. */
export function leaseRefOf(run: ModelRun): LeaseRef {
  return { id: run.id, queue: run.queue, token: run.lease!.token };
}

/** The current leases, as their holders know them. */
export function currentLeases(model: RunModel): LeaseRef[] {
  return runsWith(model, 'running').map(leaseRefOf);
}

/** Picks the `n`th item of a non-empty list, wrapping. */
export function nth<T>(items: readonly T[], n: number): T {
  return items[n % items.length]!;
}
