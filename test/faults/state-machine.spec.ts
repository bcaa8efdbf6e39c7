import * as fc from 'fast-check';
import assert from 'node:assert/strict';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConnections } from '../../libs/threadmill/src/backend/redis/redis-connections.js';
import { RedisTaskBackend } from '../../libs/threadmill/src/backend/redis/redis.backend.js';
import type { NewRun, Outcome, Segment } from '../../libs/threadmill/src/backend/task-backend.js';
import { TaskRegistry } from '../../libs/threadmill/src/task/task.registry.js';
import { Broker } from '../../libs/threadmill/src/worker/broker.js';
import { TaskExecutor } from '../../libs/threadmill/src/worker/task-executor.js';
import { redisUrl, uniqueAlias } from '../support/backend.js';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';

/**
 * Model-based test of the run state machine: random sequences of enqueue,
 * claim, acknowledge (successful, failed, retry), renew, release, lease
 * expiry, reaping, requeue, dequeue and enqueue again of a dequeued id run against the real Lua scripts on a real
 * Redis, and after every step the stored state must match a model:
 * every run in exactly one segment, agreeing with its status; one lease
 * token per claim, strictly increasing from claim to claim; no acknowledgement, renewal or release applied after
 * its lease expired or was taken over; claims in FIFO order.
 */

const QUEUE = 'model';
const MAX_RECOVERIES = 3;
const TASK = 'Model.task';
const SEGMENTS: readonly Segment[] = ['ready', 'deferred', 'running', 'successful', 'failed', 'quarantined'];

type State = 'ready' | 'running' | 'successful' | 'failed' | 'quarantined';

interface ModelRun {
  readonly order: number;
  state: State;
  token?: string;
  /** Token of the lease under which the run (a suspect) was marked started. */
  startedToken?: string;
  expired: boolean;
  recoveries: number;
  attempts: number;
}

interface Lease {
  readonly id: string;
  readonly token: string;
}

interface Model {
  readonly runs: Map<string, ModelRun>;
  /** Every lease ever handed out, current or stale. */
  readonly leases: Lease[];
  lastToken: number;
  enqueued: number;
  /** Places handed out in ready order, one per enqueue of a run. */
  placed: number;
  /** Ids of runs dequeued while ready, which may be enqueued again. */
  readonly dequeued: string[];
}

interface Real {
  readonly backend: RedisTaskBackend;
  readonly broker: Broker;
}

const SEGMENT_OF: Record<State, Segment> = {
  ready: 'ready',
  running: 'running',
  successful: 'successful',
  failed: 'failed',
  quarantined: 'quarantined',
};

const ERROR = { errorClass: 'ModelError', message: 'm', stack: 's', attempt: 1 };

/** Whether `lease` still holds in the model: current token, not expired. */
function holds(model: Model, lease: Lease): boolean {
  // A run dequeued (and maybe enqueued again since) holds none of its old leases.
  const run = model.runs.get(lease.id);
  return run !== undefined && run.state === 'running' && run.token === lease.token && !run.expired;
}

function readyInOrder(model: Model): string[] {
  return [...model.runs.entries()]
    .filter(([, run]) => run.state === 'ready')
    .sort(([, a], [, b]) => a.order - b.order)
    .map(([id]) => id);
}

async function assertMatches(model: Model, real: Real): Promise<void> {
  const { backend } = real;
  const client = backend.connections.client;
  const members = new Map<string, Segment[]>();
  for (const segment of SEGMENTS) {
    for (const id of await backend.list(QUEUE, segment, 0, 10_000)) {
      members.set(id, [...(members.get(id) ?? []), segment]);
    }
  }
  assert.equal(members.size, model.runs.size);
  const [counts] = await backend.counts([QUEUE]);
  assert.equal(counts!.ready, readyInOrder(model).length, 'ready count');
  for (const [id, run] of model.runs) {
    assert.deepEqual(members.get(id), [SEGMENT_OF[run.state]], `segments of ${id}`);
    // Claims write only the lease: read the run as readers do (lease overlaid).
    const { status, attempts, recoveries } = (await backend.load(id)) ?? {};
    const token = (await client.hget(backend.keys.leases, id))?.split('|')[0];
    // A run never claimed has no status or attempts field yet: READY, 0.
    assert.equal(status ?? 'READY', run.state.toUpperCase(), `status of ${id}`);
    assert.equal(Number(attempts ?? 0), run.attempts);
    assert.equal(Number(recoveries ?? 0), run.recoveries, `recoveries of ${id}`);
    if (run.state === 'running' && !run.expired) assert.equal(token, run.token);
  }
}

/** A new run of the model's task, stored as the backend stores it. */
function newRun(id: string, idempotent: boolean): NewRun {
  const payload = JSON.stringify({ v: 1, task: TASK, queue: QUEUE, priority: 0, args: [] });
  return { id, queue: QUEUE, priority: 0, runAt: 0, delayMs: 0, leaseTtlMs: 0, payload, idempotent };
}

/** Enters run `id` into the model, READY, last in line. */
function place(model: Model, id: string): void {
  model.runs.set(id, { order: model.placed++, state: 'ready', expired: false, recoveries: 0, attempts: 0 });
}

class EnqueueCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly count: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const runs = Array.from({ length: this.count }, () => newRun(`r${model.enqueued++}`, false));
    const { created } = await real.backend.store(runs);
    assert.equal(created.every(Boolean), true);
    for (const run of runs) place(model, run.id);
    await assertMatches(model, real);
  }
  toString = () => `enqueue(${this.count})`;
}

/** Cancels a ready run: it leaves every segment (a tombstone in the ready list). */
class DequeueCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => readyInOrder(model).length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const ready = readyInOrder(model);
    const id = ready[this.pick % ready.length]!;
    assert.deepEqual(await real.backend.dequeue(id, QUEUE), { removed: true, status: 'READY' });
    model.runs.delete(id);
    model.dequeued.push(id);
    await assertMatches(model, real);
  }
  toString = () => `dequeue(#${this.pick})`;
}

/** Enqueues a dequeued run's id again: a new run, last in line. */
class EnqueueAgainCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.dequeued.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const [id] = model.dequeued.splice(this.pick % model.dequeued.length, 1);
    assert.deepEqual((await real.backend.store([newRun(id!, true)])).created, [true]);
    place(model, id!);
    await assertMatches(model, real);
  }
  toString = () => `enqueueAgain(#${this.pick})`;
}

class ClaimCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly count: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    const expected = readyInOrder(model).slice(0, this.count);
    const claimed = await real.backend.claim([QUEUE], this.count, 'model:1:0', 0);
    assert.deepEqual(
      claimed.map((run) => run.id),
      expected,
    );
    // One token fences every lease of a claim, and it is newer than any before it.
    const tokens = new Set(claimed.map((run) => run.token));
    assert.ok(tokens.size <= 1, `one token per claim, got ${[...tokens].join(', ')}`);
    for (const leased of claimed) {
      const token = Number(leased.token);
      assert.ok(token > model.lastToken, `token ${token} after ${model.lastToken}`);
    }
    if (claimed.length > 0) model.lastToken = Number(claimed[0]!.token);
    for (const leased of claimed) {
      const run = model.runs.get(leased.id)!;
      Object.assign(run, { state: 'running', token: leased.token, expired: false, attempts: run.attempts + 1 });
      model.leases.push({ id: leased.id, token: leased.token });
    }
    await assertMatches(model, real);
  }
  toString = () => `claim(${this.count})`;
}

class AcknowledgeCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pick: number,
    readonly kind: 'successful' | 'failed' | 'retry',
  ) {}
  check = (model: Readonly<Model>) => model.leases.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const lease = model.leases[this.pick % model.leases.length]!;
    const expected = holds(model, lease);
    const outcome: Outcome =
      this.kind === 'successful'
        ? { kind: 'successful', returnValue: '1' }
        : this.kind === 'failed'
          ? { kind: 'failed', error: ERROR }
          : { kind: 'retry', error: ERROR, delayMs: 0 };
    const [applied] = await real.backend.acknowledge([{ ...lease, queue: QUEUE, outcome }]);
    assert.equal(applied, expected, `${this.kind} ack of ${lease.id}/${lease.token}`);
    if (applied) {
      const run = model.runs.get(lease.id)!;
      run.state = this.kind === 'retry' ? 'ready' : this.kind;
      run.recoveries = 0;
      run.startedToken = undefined;
    }
    await assertMatches(model, real);
  }
  toString = () => `acknowledge(#${this.pick}, ${this.kind})`;
}

class RenewCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.leases.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const lease = model.leases[this.pick % model.leases.length]!;
    const heartbeat = { id: 'model:1:0', queues: [QUEUE], concurrency: 1, startedAt: 0, done: 0, held: 1 };
    const [kept] = await real.backend.renew(heartbeat, 60_000, [{ ...lease, queue: QUEUE, leaseTtlMs: 60_000 }]);
    assert.equal(kept, holds(model, lease));
    await assertMatches(model, real);
  }
  toString = () => `renew(#${this.pick})`;
}

class ReleaseCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.leases.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const lease = model.leases[this.pick % model.leases.length]!;
    const expected = holds(model, lease);
    const [released] = await real.backend.release([{ ...lease, queue: QUEUE }]);
    assert.equal(released, expected);
    if (released) {
      const run = model.runs.get(lease.id)!;
      run.state = 'ready';
      run.attempts -= 1;
    }
    await assertMatches(model, real);
  }
  toString = () => `release(#${this.pick})`;
}

/** A worker starts a (suspect) run: recorded only while its lease holds. */
class StartCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => model.leases.length > 0;
  async run(model: Model, real: Real): Promise<void> {
    const lease = model.leases[this.pick % model.leases.length]!;
    const expected = holds(model, lease);
    assert.equal(await real.backend.markStarted({ ...lease, queue: QUEUE }), expected);
    if (expected) model.runs.get(lease.id)!.startedToken = lease.token;
    await assertMatches(model, real);
  }
  toString = () => `start(#${this.pick})`;
}

/** Makes a running run's lease deadline pass (the test's only way to move time). */
class ExpireCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) => [...model.runs.values()].some((run) => run.state === 'running' && !run.expired);
  async run(model: Model, real: Real): Promise<void> {
    const live = [...model.runs.entries()].filter(([, run]) => run.state === 'running' && !run.expired);
    const [id, run] = live[this.pick % live.length]!;
    // The deadline lives in the running set only (the reaper's index and the lease check's).
    await real.backend.connections.client.zadd(real.backend.keys.running(QUEUE), 'XX', 1, id);
    run.expired = true;
    await assertMatches(model, real);
  }
  toString = () => `expire(#${this.pick})`;
}

class ReapCommand implements fc.AsyncCommand<Model, Real> {
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    await real.broker.pass();
    for (const run of model.runs.values()) {
      if (run.state !== 'running' || !run.expired) continue;
      // A first expiry blames every run held; later ones only a run that had started.
      if (run.recoveries === 0 || run.startedToken === run.token) run.recoveries += 1;
      run.state = run.recoveries >= MAX_RECOVERIES ? 'quarantined' : 'ready';
      run.expired = false;
      run.token = undefined; // the reaper's own claim token settled it
    }
    await assertMatches(model, real);
  }
  toString = () => 'reap';
}

class RequeueCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = (model: Readonly<Model>) =>
    [...model.runs.values()].some((run) => run.state === 'failed' || run.state === 'quarantined');
  async run(model: Model, real: Real): Promise<void> {
    const settled = [...model.runs.entries()].filter(
      ([, run]) => run.state === 'failed' || run.state === 'quarantined',
    );
    const [id, run] = settled[this.pick % settled.length]!;
    const { requeued } = await real.backend.requeue(id, QUEUE);
    assert.equal(requeued, true);
    Object.assign(run, { state: 'ready', recoveries: 0, startedToken: undefined });
    await assertMatches(model, real);
  }
  toString = () => `requeue(#${this.pick})`;
}

const commands = [
  fc.integer({ min: 1, max: 4 }).map((n) => new EnqueueCommand(n)),
  fc.integer({ min: 1, max: 4 }).map((n) => new ClaimCommand(n)),
  fc
    .tuple(fc.nat(), fc.constantFrom('successful' as const, 'failed' as const, 'retry' as const))
    .map(([pick, kind]) => new AcknowledgeCommand(pick, kind)),
  fc.nat().map((pick) => new RenewCommand(pick)),
  fc.nat().map((pick) => new ReleaseCommand(pick)),
  fc.nat().map((pick) => new StartCommand(pick)),
  fc.nat().map((pick) => new ExpireCommand(pick)),
  fc.constant(new ReapCommand()),
  fc.nat().map((pick) => new RequeueCommand(pick)),
  fc.nat().map((pick) => new DequeueCommand(pick)),
  fc.nat().map((pick) => new EnqueueAgainCommand(pick)),
];

describe('the run state machine against the real scripts (fast-check)', () => {
  let connections: RedisConnections;
  let registry: TaskRegistry;
  beforeAll(() => {
    connections = new RedisConnections(redisUrl(), 'model', 5_000);
    registry = new TaskRegistry();
    registry.register({
      name: TASK,
      queue: QUEUE,
      priority: 0,
      retry: () => 0, // an expired lease is retried at once, to keep the model simple
      leaseTtlMs: undefined,
      target: class Model {},
      methodName: 'task',
      site: 'Model#task',
      handler: () => undefined,
      contextIndex: -1,
      argumentTypes: [],
    });
  });
  afterAll(() => connections.close());

  const runs = scale(100, 1_000);
  it(
    `keeps every run in exactly one state and fences every late outcome (${runs} random sequences)`,
    async () => {
      let steps = 0;
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 50, size: 'max' }), async (sequence) => {
          const backend = new RedisTaskBackend(connections, {
            alias: uniqueAlias('model'),
            leaseTtlMs: 60_000,
            resultTtlMs: 3_600_000,
            batchSize: 100,
          });
          const broker = new Broker(backend, new TaskExecutor(registry), {
            queues: [QUEUE],
            intervalMs: 1_000,
            claimTtlMs: 60_000,
            maxRecoveries: MAX_RECOVERIES,
          });
          const model: Model = { runs: new Map(), leases: [], lastToken: 0, enqueued: 0, placed: 0, dequeued: [] };
          await fc.asyncModelRun(() => ({ model, real: { backend, broker } }), sequence);
          steps += [...sequence].length;
        }),
        { numRuns: runs },
      );
      // fc.assert threw on any failed step; the sequences must also have been substantial.
      expect(steps).toBeGreaterThan(runs * 10);
      report({
        scenario: 'Model-based test of the run state machine (fast-check)',
        runs,
        faults: `${steps} random steps: enqueue, claim, start, acknowledge, renew, release, expire, reap, requeue, dequeue, enqueue again`,
        lost: 0,
        duplicates: 0,
        notes:
          'every run in exactly one segment matching its status; tokens strictly increasing per claim; no outcome applied after expiry',
      });
    },
    SCENARIO_TIMEOUT_MS,
  );
});
