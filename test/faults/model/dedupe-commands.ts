import { debouncedDue, dropKeyHolds, type KeyRunState } from '../../../libs/threadmill/src/rules/dedupe-rules.js';
import assert from 'node:assert/strict';
import type { NewRun, RunDedupe } from '../../../libs/threadmill/src/backend/task-backend.js';
import { ModelCommand, shown } from './model-command.js';
import type { ModelRig, Via } from './redis-rig.js';
import {
  addCount,
  DEFER_MS,
  apart,
  isSettled,
  MINUTE,
  TASK,
  TASK_ONCE,
  taskOf,
  type ModelDedupeKey,
  type ModelRun,
  type QueueName,
  type RunModel,
} from './run-model.js';

/**
 * Enqueues with deduplication keys (`lua/includes/dedupe.lua`): the model
 * predicts, item by item, whether the key holds a run (drop: the item is
 * answered with it; debounce: that run takes the item's payload and a later
 * due time) or the item is stored as a new run that takes the key, and what
 * each key then names. Keys are released by nothing but their run's state,
 * so every other step (claims, outcomes, expiries, removals, restores, clock
 * steps) moves them on: the next enqueue naming the key must see it.
 */

/** A drop key's hold after its first enqueue, when it has one: not near a multiple of a clock step (45 minutes). */
export const DEDUPE_HOLD_MS = 100 * MINUTE;
/**
 * A debounce's caps after the first enqueue (its quiet period is `DEFER_MS`,
 * an hour): none, the quiet period itself (every later enqueue meets the
 * cap), or more (a later enqueue pushes the run back, up to the cap).
 */
export const DEDUPE_MAX_WAITS = [0, DEFER_MS, 100 * MINUTE] as const;

/** One item of a deduplicated enqueue, as the arbitraries describe it. */
export interface DedupeSpec {
  /** Two key names, each in both queues: a key is scoped to its queue. */
  readonly key: 'k1' | 'k2';
  readonly queue: QueueName;
  readonly mode: 'drop' | 'debounce';
  /** drop: hold for DEDUPE_HOLD_MS too. */
  readonly timed: boolean;
  /** debounce: its maxWaitMs (0: none). */
  readonly maxWaitMs: (typeof DEDUPE_MAX_WAITS)[number];
  readonly releaseOn: 'start' | 'finish';
  /** drop: a deferred run (DEFER_MS), else ready now. */
  readonly deferred: boolean;
}

export const dedupeSpecText = (items: readonly DedupeSpec[]): string =>
  items
    .map(
      (s) =>
        `${s.queue}:${s.key}/${s.mode}` +
        (s.mode === 'drop'
          ? `${s.timed ? '/timed' : ''}/${s.releaseOn}${s.deferred ? '/deferred' : ''}`
          : `/cap${s.maxWaitMs}`),
    )
    .join(' ');

/** The backend's dedupe of a spec. */
function runDedupe(spec: DedupeSpec): RunDedupe {
  return spec.mode === 'drop'
    ? { key: spec.key, mode: 'drop', ttlMs: spec.timed ? DEDUPE_HOLD_MS : 0, maxWaitMs: 0, releaseOn: spec.releaseOn }
    : {
        key: spec.key,
        mode: 'debounce',
        ttlMs: DEFER_MS,
        maxWaitMs: spec.maxWaitMs,
        releaseOn: 'start',
      };
}

/**
 * A new id for a run of key `key`: its task (fixed by the id, see `taskOf`)
 * is the key's, so that a debounce, which gives a run another enqueue's
 * payload, never changes its task. A trailing 'a' flips the id's parity.
 */
function dedupeId(n: number, key: DedupeSpec['key']): string {
  const id = `dd${n}`;
  return taskOf(id) === (key === 'k1' ? TASK : TASK_ONCE) ? id : `${id}a`;
}

/** The payload of a deduplicated run: its task's, with a tag naming the enqueue that wrote it. */
const payloadOf = (id: string, tag: string): string =>
  JSON.stringify({ v: 1, task: taskOf(id), priority: 0, args: [tag] });

/** Where a key's run stands, as `dedupeRunState` reads it. */
function keyRunState(model: RunModel, key: ModelDedupeKey, queue: QueueName): KeyRunState {
  const run = model.runs.get(key.runId);
  if (run?.queue !== queue) return 'missing';
  if (isSettled(run)) return 'settled';
  if (run.status === 'running') return 'leased';
  return run.charged === 0 ? 'waiting' : 'active';
}

/** What the model expects of one deduplicated store call: per item, stored, or the id of the run it was answered with. */
export function dedupeEnqueueInModel(
  model: RunModel,
  items: readonly { id: string; spec: DedupeSpec; tag: string }[],
  now: number,
): { created: boolean[]; into: (string | undefined)[]; debounced: Map<string, string>; events: string[] } {
  const base = model.seq;
  model.seq += items.length;
  const created: boolean[] = [];
  const into: (string | undefined)[] = [];
  // Runs whose payload a debounce rewrote: id → the tag it holds now.
  const debounced = new Map<string, string>();
  // The paths taken, for the test's coverage.
  const events: string[] = [];
  items.forEach(({ id, spec }, i) => {
    const name = `${spec.queue} ${spec.key}`;
    const key = model.dedupe.get(name);
    let answer: string | undefined;
    if (key) {
      const state = keyRunState(model, key, spec.queue);
      const run = model.runs.get(key.runId);
      if (spec.mode === 'drop') {
        if (key.holdMs > 0) apart(key.firstAt + key.holdMs, now);
        const { byTime, byState } = dropKeyHolds({ ...key, untilFinish: key.releaseOn === 'f' }, state, now);
        if (byTime || byState) answer = key.runId;
        if (byTime && !byState) events.push('dedupe: drop held by its ttlMs alone');
        if (!byState && !byTime && state !== 'missing' && state !== 'waiting')
          events.push(`dedupe: key released, run ${state}`);
        if (!byState && !byTime && run?.status === 'cancelled') events.push('dedupe: key released, run cancelled');
      } else if (state === 'waiting' && run!.status === 'deferred') {
        const due = debouncedDue(now, DEFER_MS, key.firstAt, spec.maxWaitMs);
        if (due < now + DEFER_MS) events.push('dedupe: debounce capped at maxWaitMs');
        run!.dueAt = due;
        debounced.set(key.runId, items[i]!.tag);
        answer = key.runId;
      }
    }
    into.push(answer);
    created.push(answer === undefined);
    if (answer !== undefined) return;
    const deferred = spec.mode === 'debounce' || spec.deferred;
    if (!model.ids.includes(id)) model.ids.push(id);
    model.lastQueue.set(id, spec.queue);
    addCount(model, spec.queue, 'enqueued');
    const run: ModelRun = {
      id,
      queue: spec.queue,
      priority: 0,
      seq: base + i + 1,
      status: deferred ? 'deferred' : 'ready',
      ...(deferred ? { dueAt: now + DEFER_MS } : {}),
      charged: 0,
      started: 0,
      recoveries: 0,
    };
    model.runs.set(id, run);
    model.dedupe.set(name, {
      runId: id,
      firstAt: now,
      holdMs: spec.mode === 'drop' && spec.timed ? DEDUPE_HOLD_MS : 0,
      releaseOn: spec.mode === 'drop' && spec.releaseOn === 'finish' ? 'f' : 's',
    });
  });
  return { created, into, debounced, events };
}

/** Stores 1..4 runs with dedupe keys (mostly few keys, so that items meet keys held, in the call or before it). */
export class DedupeEnqueueCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly items: readonly DedupeSpec[],
    readonly through: Via,
  ) {
    super();
    this.kind = through === 'lost' ? 'dedupe enqueue, reply lost' : 'dedupe enqueue';
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const planned = this.items.map((spec) => {
      const n = model.nextId++;
      return { id: dedupeId(n, spec.key), spec, tag: `t${n}` };
    });
    const runs: NewRun[] = planned.map(({ id, spec, tag }) => ({
      id,
      queue: spec.queue,
      priority: 0,
      runAt: 0,
      delayMs: spec.mode === 'debounce' || spec.deferred ? DEFER_MS : 0,
      leaseTtlMs: 0,
      payload: payloadOf(id, tag),
      singleLine: true,
      idempotent: false,
      dedupe: runDedupe(spec),
    }));
    const outcome = await rig.via(this.through, 'enqueue', (backend) => backend.store(runs));
    const expected = dedupeEnqueueInModel(model, planned, outcome.now);
    const label = `dedupe enqueue of ${planned.map(({ id }) => shown(id)).join(', ')}`;
    assert.deepEqual(outcome.created, expected.created, `created, of ${label}`);
    assert.deepEqual(outcome.deduplicated ?? planned.map(() => undefined), expected.into, `answered runs, of ${label}`);
    // A debounced run holds the payload of the latest enqueue that named its key.
    for (const [id, tag] of expected.debounced) {
      const stored = await rig.backend.load(id);
      assert.equal(stored?.['payload'], payloadOf(id, tag), `the payload of debounced run ${id}`);
    }
    rig.tally.stored += expected.created.filter(Boolean).length;
    rig.tally.note("dedupe: item answered with its key's run", expected.into.filter((id) => id !== undefined).length);
    rig.tally.note('dedupe: debounced run pushed back', expected.debounced.size);
    for (const event of expected.events) rig.tally.note(event);
  }

  toString(): string {
    return `dedupeEnqueue[${this.through}](${dedupeSpecText(this.items)})`;
  }
}
