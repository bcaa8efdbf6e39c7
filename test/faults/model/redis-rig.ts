import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { doneFinishedAt } from '../../../libs/threadmill/src/backend/redis/done-record.js';
import type { RedisClient } from '../../../libs/threadmill/src/backend/redis/redis-client.js';
import { RedisConnections } from '../../../libs/threadmill/src/backend/redis/redis-connections.js';
import { RedisTaskBackend } from '../../../libs/threadmill/src/backend/redis/redis.backend.js';
import { LUA_SOURCES } from '../../../libs/threadmill/src/backend/redis/scripts/lua-sources.generated.js';
import type { ClaimWaiter } from '../../../libs/threadmill/src/backend/task-backend.js';
import { TaskRegistry } from '../../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../../libs/threadmill/src/worker/task-executor.js';
import { CapturedLogger } from '../../support/captured-logger.js';
import { ReplyDropProxy } from '../../support/reply-drop-proxy.js';
import { uniqueAlias } from '../../support/backend.js';
import { successfulIds } from '../../support/stored-payload.js';
import {
  LEASE_TTL_MS,
  MAX_RECOVERIES,
  QUEUES,
  RESULT_TTLS,
  TASK,
  TASK_ONCE,
  TASK_RESULT_TTLS,
  type FinishedStatus,
  type QueueName,
  type RunModel,
} from './run-model.js';

export { TASK };

/** The model's one task: the broker retries an expired started attempt at once. */
/** Names the test's connections, so that it can find its blocked waits in `CLIENT LIST`. */
const CONNECTION_NAME = 'state-machine';

/** The scripts whose lost reply the test injects. */
export type LossyScript =
  | 'enqueue'
  | 'claim'
  | 'acknowledge'
  | 'release'
  | 'requeue'
  | 'dequeue'
  | 'purge'
  | 'pause'
  | 'resume'
  | 'scheduleFire'
  | 'report'
  | 'cap'
  | 'rate'
  | 'defer'
  | 'cancel'
  | 'taskLimit'
  | 'flowStore'
  | 'flowCancel';
/** What an EVALSHA of a script carries: the SHA1 of its source. */
const sha = (script: LossyScript): string => createHash('sha1').update(LUA_SOURCES[script]).digest('hex');

/** How a call reaches Redis: directly, or through the proxy that loses its reply. */
export type Via = 'direct' | 'lost';

/** What the sequences did, for the report and for asserting that every path ran. */
export class Tally {
  readonly steps = new Map<string, number>();
  readonly lost = new Map<LossyScript | 'two claims', number>();
  /** Transitions of the model that steps made happen (a stale outcome, a run quarantined by the broker...). */
  readonly events = new Map<string, number>();
  stored = 0;
  /** Attempts started and charged, summed over the runs each sequence ended with. */
  started = 0;
  charged = 0;

  count(step: string): void {
    this.steps.set(step, (this.steps.get(step) ?? 0) + 1);
  }

  note(event: string, n = 1): void {
    if (n > 0) this.events.set(event, (this.events.get(event) ?? 0) + n);
  }

  attempts(model: RunModel): void {
    for (const run of model.runs.values()) {
      this.started += run.started;
      this.charged += run.charged;
    }
  }

  total(): number {
    return [...this.steps.values()].reduce((sum, n) => sum + n, 0);
  }
}

/**
 * What every sequence shares: a command connection to Redis, a second one
 * through a proxy that loses replies, the task registry, and a logger that
 * keeps what the library logs (a ghost, a run id in a set without its record,
 * is logged as an error).
 */
export class ModelHarness {
  readonly tally = new Tally();
  readonly logger = new CapturedLogger();
  readonly registry = new TaskRegistry();

  private constructor(
    readonly direct: RedisConnections,
    readonly lossy: RedisConnections,
    readonly proxy: ReplyDropProxy,
    private readonly lossyClient: Redis,
  ) {
    for (const name of [TASK, TASK_ONCE] as const) this.register(name);
    Logger.overrideLogger(this.logger);
  }

  /**
   * `TASK` retries at once after a lost lease; `TASK_ONCE` has no retry
   * policy. Each declares its result TTLs (`TASK_RESULT_TTLS`), which the
   * broker and the test's acknowledgements apply, as a worker does.
   */
  private register(name: typeof TASK | typeof TASK_ONCE): void {
    this.registry.register({
      kind: 'method',
      name,
      queue: QUEUES[0],
      priority: 0,
      retry: name === TASK ? () => 0 : undefined,
      leaseTtlMs: undefined,
      timeoutMs: undefined,
      resultTtlMs: TASK_RESULT_TTLS[name],
      target: class Model {},
      methodName: name === TASK ? 'task' : 'once',
      site: `Model#${name === TASK ? 'task' : 'once'}`,
      handler: () => undefined,
      contextIndex: -1,
      createContext: () => {
        throw new Error('the model task takes no context');
      },
      argumentTypes: [],
    });
  }

  static async start(redisUrl: string): Promise<ModelHarness> {
    const proxy = await ReplyDropProxy.start(redisUrl);
    // The application's own ioredis instance, as an application may pass one:
    // the library's settings that matter here (no offline queue, RESP2,
    // resending what a dropped connection left unanswered), but reconnecting
    // at once, so that each lost reply costs milliseconds, not the library's
    // backoff of 50 to 150.
    const lossyClient = new Redis(proxy.url, {
      connectionName: `threadmill:${CONNECTION_NAME}:lossy`,
      enableOfflineQueue: false,
      commandTimeout: 5_000,
      retryStrategy: () => 2,
    });
    const direct = new RedisConnections(redisUrl, CONNECTION_NAME, 5_000);
    const lossy = new RedisConnections(lossyClient, CONNECTION_NAME, 5_000);
    // The rig also reads and writes keys on the command connection directly.
    await Promise.all([direct.ready(), lossy.ready()]);
    return new ModelHarness(direct, lossy, proxy, lossyClient);
  }

  async close(): Promise<void> {
    await this.direct.close();
    this.lossyClient.disconnect();
    await this.proxy.stop();
  }
}

/** One sequence's backend (a fresh alias), seen directly and through the proxy, with its broker and waiters. */
export class ModelRig {
  readonly alias = uniqueAlias('model');
  readonly backend: RedisTaskBackend;
  /** The same keys through the proxy: a second backend instance, its own call ids. */
  readonly lossy: RedisTaskBackend;
  readonly broker: Broker;
  readonly client: RedisClient;
  private readonly waiters = new Map<string, ClaimWaiter>();
  /** The id of the last `finished` entry checked (see `assertPublished`). */
  feedPosition = '0-0';
  private snapshot: { key: string; dump: Buffer; ttl: number }[] = [];

  constructor(readonly harness: ModelHarness) {
    const settings = { alias: this.alias, leaseTtlMs: LEASE_TTL_MS, resultTtlMs: RESULT_TTLS, batchSize: 100 };
    this.backend = new RedisTaskBackend(harness.direct, settings);
    this.lossy = new RedisTaskBackend(harness.lossy, settings);
    this.client = harness.direct.client;
    this.broker = new Broker(this.backend, new TaskExecutor(harness.registry), {
      queues: QUEUES,
      intervalMs: 1_000,
      claimTtlMs: 60_000,
      maxRecoveries: MAX_RECOVERIES,
    });
  }

  get tally(): Tally {
    return this.harness.tally;
  }

  /** The claim waiter of `worker` on `queues`, one each, as a consumer keeps it. */
  waiter(queues: readonly QueueName[], worker: string): ClaimWaiter {
    const key = `${worker}/${queues.join(',')}`;
    let waiter = this.waiters.get(key);
    if (!waiter) {
      waiter = this.backend.claimWaiter(queues, worker);
      this.waiters.set(key, waiter);
    }
    return waiter;
  }

  /**
   * Runs `call` on the backend `via` says. A lost reply: the script is first
   * called harmlessly on the proxy's current connection, so that ioredis
   * sends the call itself as EVALSHA, which the proxy recognises by its SHA1
   * (the first call of a script on a connection goes whole, as EVAL); the
   * reply is then lost, the connection cut, and ioredis resends the call.
   */
  async via<T>(via: Via, script: LossyScript, call: (backend: RedisTaskBackend) => Promise<T>): Promise<T> {
    if (via === 'direct') return call(this.backend);
    await this.warm(script);
    const { proxy } = this.harness;
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo(sha(script));
    const result = await call(this.lossy);
    this.confirmLost(dropped, `the reply of ${script}`);
    this.tally.lost.set(script, (this.tally.lost.get(script) ?? 0) + 1);
    return result;
  }

  /** Arms the proxy to lose every reply of the connection for 50 ms from the next claim's: two in flight. */
  async loseClaimReplies(): Promise<() => void> {
    await this.warm('claim');
    const { proxy } = this.harness;
    const dropped = proxy.dropped;
    proxy.dropNextReplyTo(sha('claim'), { lingerMs: 50 });
    return () => {
      this.confirmLost(dropped, 'the replies of the claims');
      this.tally.lost.set('two claims', (this.tally.lost.get('two claims') ?? 0) + 1);
    };
  }

  /** Asserts that the proxy lost a reply since it had lost `before`; if not, disarms it for the calls to come. */
  private confirmLost(before: number, what: string): void {
    const { proxy } = this.harness;
    if (proxy.dropped === before) proxy.dropNextReplyTo('\0 no request holds this');
    assert.ok(proxy.dropped > before, `${what} was lost`);
  }

  /** A call of `script` through the proxy that changes nothing the model knows. */
  private async warm(script: LossyScript): Promise<void> {
    const none = { id: 'warm-up', queue: QUEUES[0], token: 'warm-up' };
    const calls: Record<LossyScript, () => Promise<unknown>> = {
      enqueue: () => this.lossy.store([]),
      // A queue the model does not know: a claim of one of its own may un-park runs of its groups.
      claim: () => this.lossy.claim(['warm-up'], 0, 'warm-up', 0),
      acknowledge: () => this.lossy.acknowledge([], [none]),
      release: () => this.lossy.release([none]),
      // No lease holds: refused, nothing written.
      report: () => this.lossy.report([{ ...none, lines: [] }]),
      requeue: () => this.lossy.requeue(none.id, none.queue),
      dequeue: () => this.lossy.dequeue(none.id, none.queue),
      cancel: () => this.lossy.cancel(none.id, none.queue),
      purge: () => this.lossy.purge('warm-up'),
      // A queue the model does not know: its flag changes nothing the model knows.
      pause: () => this.lossy.pause('warm-up'),
      resume: () => this.lossy.resume('warm-up'),
      // No schedule has this id: the compare-and-set fails, nothing is written.
      scheduleFire: () =>
        this.lossy.schedules.fire({
          id: 'warm-up',
          digest: 'warm-up',
          next: '',
          slot: null,
          runId: 'warm-up',
          following: null,
          skipped: 0,
          overlapSkip: false,
          limit: 0,
          queue: QUEUES[0],
          priority: 0,
          leaseTtlMs: 0,
          payload: '{}',
          firedBy: 'warm-up',
        }),
      cap: () => this.lossy.setConcurrencyCap('warm-up', null),
      rate: () => this.lossy.setRateLimit('warm-up', null),
      defer: () => this.lossy.defer([{ ...none, delayMs: 1 }]),
      // A task no run names: removing its limit changes nothing the model knows.
      taskLimit: () => this.lossy.setTaskLimit('warm-up', null),
      // A flow of no nodes (stored once, then found stored); no flow has the id the cancel names.
      flowStore: () => this.lossy.flows.store({ id: 'warm-up', nodes: [] }),
      flowCancel: () => this.lossy.flows.cancel('warm-up-none'),
    };
    await calls[script]();
  }

  /**
   * The key of a finished index of `queue`: the default one of `status`, or
   * that of TTL class `member` (`successful:<ttl>`, `failed:<ttl>`).
   */
  indexKey(queue: QueueName, status: FinishedStatus, member: string | undefined): string {
    return member === undefined
      ? this.backend.keys.segment(queue, status)
      : this.backend.keys.resultClass(queue, member);
  }

  /** Every finished index of `queue` that exists: the default ones and those of the classes registered. */
  async indexKeys(queue: QueueName): Promise<{ status: FinishedStatus; member?: string; key: string }[]> {
    const members = await this.client.smembers(this.backend.keys.resultClasses(queue));
    return [
      { status: 'successful' as const, key: this.indexKey(queue, 'successful', undefined) },
      { status: 'failed' as const, key: this.indexKey(queue, 'failed', undefined) },
      ...members.sort().map((member) => {
        const status = member.slice(0, member.indexOf(':')) as FinishedStatus;
        return { status, member, key: this.indexKey(queue, status, member) };
      }),
    ];
  }

  /**
   * Sets the score of `id` in the sorted set of `queue`'s `segment`, which
   * holds it; of a finished run, in the index `member` names (its TTL class,
   * or undefined for the default one).
   */
  async setScore(
    queue: QueueName,
    segment: 'running' | 'deferred' | 'cancelled' | FinishedStatus,
    id: string,
    score: number,
    member?: string,
  ) {
    const key =
      segment === 'successful' || segment === 'failed'
        ? this.indexKey(queue, segment, member)
        : this.backend.keys.segment(queue, segment);
    if (segment === 'successful') {
      // A list entry keeps its place; the time is the record's (lua/includes/successful-index.lua).
      assert.ok((await this.successfulOrder(queue, member)).includes(id), `${id} is in ${key}`);
      await this.setFinishedAt(id, score);
      return;
    }
    const [[, before]] = (await this.client.multi().zscore(key, id).zadd(key, 'XX', score, id).exec())!;
    assert.notEqual(before, null, `${id} is in ${key}`);
  }

  /** The finish time of `id` in `queue`'s index of `status` and class `member`. */
  async score(queue: QueueName, status: FinishedStatus, id: string, member?: string): Promise<number> {
    const key = this.indexKey(queue, status, member);
    if (status === 'failed') return Number(await this.client.zscore(key, id));
    assert.ok((await this.client.lrange(key, 0, -1)).includes(id), `${id} is in ${key}`);
    return this.finishedAt(id);
  }

  /** When successful run `id` finished: the head of its done record, or its run hash's field. */
  async finishedAt(id: string): Promise<number> {
    const done = await this.client.hget(this.backend.keys.done, id);
    return done ? doneFinishedAt(done) : Number(await this.client.hget(this.backend.keys.run(id), 'finishedAt'));
  }

  /**
   * Moves the finish time of successful run `id` to `at`: a done record's
   * head, or its run hash's field. A done record's claim time is relative to
   * its finish time (lua/includes/done.lua) and moves with it; the model does
   * not follow claim times.
   */
  async setFinishedAt(id: string, at: number): Promise<void> {
    const done = await this.client.hget(this.backend.keys.done, id);
    if (done) await this.client.hset(this.backend.keys.done, id, `${at}${done.slice(done.indexOf('|'))}`);
    else await this.client.hset(this.backend.keys.run(id), 'finishedAt', String(at));
  }

  /** The ids of a queue's successful list (of TTL class `member`, or the default one), oldest first: its finish order. */
  async successfulOrder(queue: QueueName, member?: string): Promise<string[]> {
    return successfulIds(this.client, this.indexKey(queue, 'successful', member));
  }

  /** A step of the clock, as the scripts see it: every deadline, due and finish time shifted by `deltaMs`. */
  async shiftTimes(deltaMs: number): Promise<void> {
    const indexes = (await Promise.all(QUEUES.map((queue) => this.indexKeys(queue)))).flat();
    const keys = [
      ...QUEUES.flatMap((queue) =>
        (['running', 'deferred'] as const).map((segment) => this.backend.keys.segment(queue, segment)),
      ),
      // The rate logs' claim times, the queues' and their limit groups'.
      ...QUEUES.map((queue) => this.backend.keys.starts(queue)),
      ...(
        await Promise.all(QUEUES.map((queue) => this.client.keys(`${this.backend.keys.group(queue, 'starts', '')}*`)))
      ).flat(),
      ...indexes.filter(({ status }) => status === 'failed').map(({ key }) => key),
      ...QUEUES.map((queue) => this.backend.keys.cancelled(queue)),
    ];
    const lists = indexes.filter(({ status }) => status === 'successful').map(({ key }) => key);
    const scored = await Promise.all(keys.map((key) => this.client.zrange(key, 0, -1, 'WITHSCORES')));
    const listed = await Promise.all(lists.map((key) => this.client.lrange(key, 0, -1)));
    const transaction = this.client.multi();
    keys.forEach((key, k) => {
      const flat = scored[k]!;
      for (let i = 0; i < flat.length; i += 2) transaction.zadd(key, 'XX', Number(flat[i + 1]) + deltaMs, flat[i]!);
    });
    // When a claim looks at a limit group again: a time (a rate's window, a
    // recheck of leases) moves with the clock; 0 (at once) and a cap's half
    // time (at every claim) are no times.
    for (const queue of QUEUES) {
      const flat = await this.client.zrange(this.backend.keys.groups(queue), 0, -1, 'WITHSCORES');
      for (let i = 0; i < flat.length; i += 2) {
        if (Number(flat[i + 1]) > 1e12)
          transaction.zadd(this.backend.keys.groups(queue), 'XX', Number(flat[i + 1]) + deltaMs, flat[i]!);
      }
    }
    await transaction.exec();
    // A successful run's finish time is its record's: the model's commands
    // run one at a time, so nothing moves it between the read and the write.
    for (const id of listed.flat()) await this.setFinishedAt(id, (await this.finishedAt(id)) + deltaMs);
    // A deduplication key's first enqueue time (`firstAt|holdMs|releaseOn|runId`), its TTL kept.
    for (const key of await this.dedupeKeys()) {
      const [value, ttl] = await Promise.all([this.client.get(key), this.client.pttl(key)]);
      const bar = value!.indexOf('|');
      const shifted = `${Number(value!.slice(0, bar)) + deltaMs}${value!.slice(bar)}`;
      await this.client.set(key, shifted, 'PX', ttl);
    }
  }

  /** The names of the sequence's deduplication keys. */
  dedupeKeys(): Promise<string[]> {
    return this.client.keys(`${this.backend.keys.prefix}q:*:dedupe:*`);
  }

  /** How many entries the rate log of `queue` holds in Redis (expired ones included until a claim drops them). */
  rateLogSize(queue: string): Promise<number> {
    return this.client.zcard(this.backend.keys.starts(queue));
  }

  /** Every key of the backend, as a restart from a snapshot taken now would bring them back. */
  async takeSnapshot(): Promise<void> {
    const keys = await this.client.keys(`${this.backend.keys.prefix}*`);
    const pipeline = this.client.pipeline();
    for (const key of keys) pipeline.dumpBuffer(key).pttl(key);
    const replies = (await pipeline.exec()) ?? [];
    this.snapshot = keys
      .map((key, i) => ({ key, dump: replies[2 * i]![1] as Buffer, ttl: Number(replies[2 * i + 1]![1]) }))
      .filter(({ dump }) => dump !== null);
  }

  /** Redis restarted from the snapshot: every key of the backend as it was then, none added since. */
  async restoreSnapshot(): Promise<void> {
    const current = await this.client.keys(`${this.backend.keys.prefix}*`);
    const transaction = this.client.multi();
    if (current.length > 0) transaction.del(...current);
    for (const { key, dump, ttl } of this.snapshot) transaction.restore(key, Math.max(ttl, 0), dump, 'REPLACE');
    await transaction.exec();
  }

  /** The Redis client ids of this test's claim waiters blocked in their wait. */
  async blockedWaits(): Promise<string[]> {
    const list = (await this.client.call('CLIENT', 'LIST', 'TYPE', 'normal')) as string;
    return list
      .split('\n')
      .filter((line) => line.includes(` name=threadmill:${CONNECTION_NAME}:wake `) && / flags=\S*b/.test(line))
      .map((line) => /^id=(\d+)/.exec(line)![1]!);
  }

  async clientGone(id: string): Promise<boolean> {
    const list = (await this.client.call('CLIENT', 'LIST', 'ID', id)) as string;
    return list.trim() === '';
  }

  /** Deletes the sequence's keys and closes its waiters. */
  async close(): Promise<void> {
    await Promise.all([...this.waiters.values()].map((waiter) => waiter.close()));
    const keys = await this.client.keys(`${this.backend.keys.prefix}*`);
    if (keys.length > 0) await this.client.del(...keys);
  }
}

/** Polls `condition` every 2 ms until it holds, failing after `timeoutMs`. */
export async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await delay(2);
  }
}
