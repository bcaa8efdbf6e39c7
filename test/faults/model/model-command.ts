import type * as fc from 'fast-check';
import assert from 'node:assert/strict';
import type { NewRun } from '../../../libs/threadmill/src/backend/task-backend.js';
import type { PlannedRun } from './queue-transitions.js';
import type { ModelRig } from './redis-rig.js';
import {
  adopt,
  cloneModel,
  DEFER_MS,
  freeIds,
  QUEUES,
  readyIds,
  taskOf,
  type QueueName,
  type RunModel,
} from './run-model.js';
import { assertPublished } from './feed-check.js';
import { assertMatches } from './state-check.js';
import { assertDedupeKeys } from './dedupe-check.js';
import { assertGroups } from './group-check.js';
import { assertFlows } from './flow-check.js';

/**
 * A step of a sequence: it acts on Redis and on the model, asserting what
 * each call answered, then the whole stored state is compared with the model.
 */
export abstract class ModelCommand implements fc.AsyncCommand<RunModel, ModelRig> {
  /** The step's kind, counted for the report. */
  protected abstract readonly kind: string;

  check(_model: Readonly<RunModel>): boolean {
    return true;
  }

  async run(model: RunModel, rig: ModelRig): Promise<void> {
    await this.act(model, rig);
    rig.tally.count(this.kind);
    for (const note of model.notes.splice(0)) rig.tally.note(note);
    await assertMatches(model, rig);
    await assertGroups(model, rig);
    await assertDedupeKeys(model, rig);
    await assertPublished(model, rig);
    await assertFlows(model, rig);
  }

  protected abstract act(model: RunModel, rig: ModelRig): Promise<void>;

  abstract toString(): string;
}

/**
 * Two calls raced in Redis: one order of them must explain what each
 * answered. Each order is tried on a copy of the model (it applies the calls
 * and asserts their answers); the first that holds becomes the model.
 */
export function oneOrderOf(model: RunModel, orders: Record<string, (copy: RunModel) => void>): string {
  const failures: string[] = [];
  for (const [name, order] of Object.entries(orders)) {
    const copy = cloneModel(model);
    try {
      order(copy);
    } catch (error) {
      failures.push(`${name}: ${(error as Error).message}`);
      continue;
    }
    adopt(model, copy);
    return name;
  }
  assert.fail(`No order of the racing calls explains what Redis answered:\n${failures.join('\n')}`);
}

/** A run to enqueue, as the arbitraries describe it; its id is chosen against the model when the step runs. */
export interface RunSpec {
  /** A new id, a free one (its run left: enqueued again, maybe into the other queue), or a taken one (refused). */
  readonly id: 'new' | 'free' | 'taken';
  readonly pick: number;
  readonly queue: QueueName;
  readonly priority: number;
  readonly deferred: boolean;
  readonly idempotent: boolean;
  /** Ids a caller chose may hold the separators of the scripts' encodings. */
  readonly style: 'plain' | 'pipe' | 'newline';
  /** A run of a task with a limit: per key (`k1`, `k2`) or for the task as a whole. */
  readonly group?: 'k1' | 'k2' | 'task';
}

/** Prints run specs for a counterexample. */
export const specsText = (items: readonly RunSpec[]): string =>
  items
    .map(
      (s) =>
        `${s.id}#${s.pick}:${s.queue}/p${s.priority}${s.deferred ? '/deferred' : ''}${s.group ? `/${s.group}` : ''}`,
    )
    .join(' ');

/** Chooses each spec's id against the model: distinct within the call. */
export function planRuns(model: RunModel, specs: readonly RunSpec[]): PlannedRun[] {
  const chosen = new Set<string>();
  return specs.map((spec) => {
    const candidates = spec.id === 'free' ? freeIds(model) : spec.id === 'taken' ? [...model.runs.keys()] : [];
    const rotated = [...candidates.slice(spec.pick % (candidates.length || 1)), ...candidates];
    let id = rotated.find((candidate) => !chosen.has(candidate));
    if (id === undefined) {
      const n = model.nextId++;
      id = spec.style === 'pipe' ? `r${n}|x` : spec.style === 'newline' ? `r${n}\nx` : `r${n}`;
    }
    chosen.add(id);
    // Storing a taken id is only sound as idempotent: a fresh id is trusted to be new.
    const idempotent = spec.idempotent || model.runs.has(id);
    const planned = { id, queue: spec.queue, priority: spec.priority, deferred: spec.deferred, idempotent };
    if (spec.group === undefined) return planned;
    // Its group is of the task its id runs (`taskOf`), per key or whole.
    return { ...planned, group: spec.group === 'task' ? taskOf(id) : `${taskOf(id)}\n${spec.group}` };
  });
}

/** The backend's form of a planned run. */
export function newRun(run: PlannedRun): NewRun {
  return {
    id: run.id,
    queue: run.queue,
    priority: run.priority,
    runAt: 0,
    delayMs: run.deferred ? DEFER_MS : 0,
    leaseTtlMs: 0,
    payload: JSON.stringify({ v: 1, task: taskOf(run.id), priority: run.priority, args: [] }),
    singleLine: true,
    idempotent: run.idempotent,
    ...(run.group !== undefined ? { limitGroup: run.group } : {}),
  };
}

/** The queues a selector (0..3) names: one, the other, or both in either order. */
export function queuesOf(selector: number): QueueName[] {
  const [first, second] = QUEUES;
  return [[first], [second], [first, second], [second, first]][selector % 4]!;
}

/**
 * The first selection of queues, from `selector` on, in which no run is
 * ready (an idle consumer of them blocks), or undefined when there is none.
 */
export function idleQueuesOf(model: RunModel, selector: number): QueueName[] | undefined {
  for (let step = 0; step < 4; step++) {
    const queues = queuesOf(selector + step);
    if (queues.every((queue) => readyIds(model, queue).length === 0)) return queues;
  }
  return undefined;
}

/** Prints an id for a counterexample: ids may hold a newline. */
export const shown = (id: string): string => JSON.stringify(id);
