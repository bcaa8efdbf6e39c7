import assert from 'node:assert/strict';
import type { FireOutcome, ScheduleFire } from '../../../libs/threadmill/src/backend/schedule-store.js';
import { slotRunId } from '../../../libs/threadmill/src/schedule/schedule-plan.js';
import { ModelCommand, oneOrderOf } from './model-command.js';
import { enqueueInModel } from './queue-transitions.js';
import type { ModelRig } from './redis-rig.js';
import { nth, taskOf, type ModelSchedule, type QueueName, type RunModel } from './run-model.js';

/** Commands on schedules: upsert, fire a slot (alone, twice at once, stale, its reply lost), remove. */

/** Slots are opaque to the fire script: far from the clock, a minute apart. */
const FIRST_SLOT = 1_000_000_000_000;
const SLOT_MS = 60_000;

/** The next slot to plan for `schedule`: after every slot it ever fired, as a scheduler plans it. */
function plannedSlot(schedule: ModelSchedule): number {
  return Math.max(FIRST_SLOT, ...schedule.fired.keys()) + SLOT_MS;
}

/** The fire call a scheduler makes for the stored next slot of `schedule` (planning it when it is ''). */
function fireOf(schedule: ModelSchedule): ScheduleFire {
  const slot = schedule.next === '' ? null : Number(schedule.next);
  const runId = slotRunId(schedule.id, slot ?? 0);
  return {
    id: schedule.id,
    digest: schedule.digest,
    next: schedule.next,
    slot,
    runId,
    following: slot === null ? plannedSlot(schedule) : slot + SLOT_MS,
    skipped: 0,
    overlapSkip: schedule.overlap,
    limit: schedule.limit,
    queue: schedule.queue,
    priority: 0,
    leaseTtlMs: 0,
    // Each run's task by its id, as every run of the model: TASK_ONCE (no retry) or TASK.
    payload: JSON.stringify({ v: 1, task: taskOf(runId), args: [] }),
    firedBy: 'host-a:1:0',
  };
}

/** What the fire script does with `fire`, in the model; returns its outcome. */
function fireInModel(model: RunModel, fire: ScheduleFire, now: number): FireOutcome {
  const schedule = model.schedules.get(fire.id);
  if (!schedule || schedule.digest !== fire.digest || schedule.next !== fire.next) return 'moved';
  const advance = (outcome: FireOutcome) => {
    schedule.next = fire.following === null ? 'end' : String(fire.following);
    if (outcome === 'overlap') schedule.skipped++;
    return outcome;
  };
  if (fire.slot === null) return advance('advanced');
  if (schedule.limit > 0 && schedule.runs >= schedule.limit) {
    schedule.next = 'end';
    return 'limit';
  }
  const previous = schedule.lastRun === undefined ? undefined : model.runs.get(schedule.lastRun);
  if (schedule.overlap && previous && ['ready', 'deferred', 'running'].includes(previous.status)) {
    return advance('overlap');
  }
  if (model.runs.has(fire.runId)) return advance('exists');
  enqueueInModel(
    model,
    [{ id: fire.runId, queue: schedule.queue, priority: 0, deferred: false, idempotent: true }],
    now,
  );
  schedule.runs++;
  schedule.lastRun = fire.runId;
  schedule.lastSlot = fire.slot;
  const times = (schedule.fired.get(fire.slot) ?? 0) + 1;
  schedule.fired.set(fire.slot, times);
  assert.equal(times, 1, `slot ${fire.slot} of ${fire.id} fired ${times} times`);
  advance('fired');
  if (schedule.limit > 0 && schedule.runs >= schedule.limit) schedule.next = 'end';
  return 'fired';
}

/** The schedules a scheduler may fire: not stopped, a next slot left. */
function liveSchedules(model: Readonly<RunModel>): ModelSchedule[] {
  return [...model.schedules.values()].filter((s) => !s.stopped && s.next !== 'end');
}

/** The stored schedules must be the model's: next slot, runs, skips and last run. */
async function assertSchedules(model: RunModel, rig: ModelRig): Promise<void> {
  const stored = await rig.backend.schedules.list();
  assert.deepEqual(
    stored.map((s) => ({ id: s.id, next: s.next, runs: s.runs, skipped: s.skipped, lastRun: s.lastRun })),
    [...model.schedules.values()]
      .filter((s) => !s.stopped)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((s) => ({ id: s.id, next: s.next, runs: s.runs, skipped: s.skipped, lastRun: s.lastRun ?? null })),
    'the stored schedules',
  );
}

/** Creates a schedule, or replaces one's definition (its next slot is then to plan again). */
export class UpsertScheduleCommand extends ModelCommand {
  protected readonly kind = 'upsert a schedule';

  constructor(
    readonly pick: number,
    readonly queue: QueueName,
    readonly overlap: boolean,
    readonly limit: number,
  ) {
    super();
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const ids = [...model.schedules.keys()];
    const id = ids.length > 0 && this.pick % 3 === 0 ? nth(ids, this.pick) : `s${model.nextId++}`;
    const digest = `${this.queue}/${this.overlap}/${this.limit}`;
    const answer = await rig.backend.schedules.upsert(id, digest, JSON.stringify({ digest }), this.queue);
    const existing = model.schedules.get(id);
    if (existing?.digest === digest && existing.source === 'api') {
      assert.equal(answer, 'unchanged', `upsert of ${id}, unchanged`);
    } else {
      // A stopped code schedule has no definition to replace.
      assert.equal(answer, existing && !existing.stopped ? 'replaced' : 'created', `upsert of ${id}`);
      const schedule = existing ?? { id, runs: 0, skipped: 0, fired: new Map<number, number>() };
      // An upsert of a code schedule's id makes it the application's: its declarations go.
      model.schedules.set(id, {
        ...schedule,
        queue: this.queue,
        digest,
        overlap: this.overlap,
        limit: this.limit,
        next: '',
        source: 'api',
        forms: [],
        stopped: false,
      } as ModelSchedule);
    }
    await assertSchedules(model, rig);
  }

  toString(): string {
    return `upsertSchedule(#${this.pick}, ${this.queue}, overlap ${this.overlap ? 'skip' : 'allow'}, limit ${this.limit})`;
  }
}

/** How a fire is sent: alone, twice at once (two schedulers read the same slot), stale, or with its reply lost. */
export type FireMode = 'one' | 'twice' | 'stale' | 'lost';

/**
 * A scheduler fires the stored next slot of a schedule (or plans it). The
 * oracle: each slot of a schedule fires one run at most (`fireInModel`), an
 * outcome applies only while the schedule is as the caller read it, and two
 * calls for one slot fire it once.
 */
export class FireScheduleCommand extends ModelCommand {
  protected readonly kind: string;

  constructor(
    readonly pick: number,
    readonly mode: FireMode,
  ) {
    super();
    this.kind = `fire a slot${mode === 'one' ? '' : `, ${mode}`}`;
  }

  override check(model: Readonly<RunModel>): boolean {
    return liveSchedules(model).length > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const live = liveSchedules(model);
    if (live.length === 0) return;
    const schedule = nth(live, this.pick);
    const fire = fireOf(schedule);
    const store = rig.backend.schedules;
    if (this.mode === 'stale') {
      const { outcome } = await store.fire({ ...fire, next: `${fire.next}0` });
      assert.equal(outcome, 'moved', `a stale fire of ${fire.id}`);
    } else if (this.mode === 'twice') {
      const [a, b] = await Promise.all([store.fire(fire), store.fire(fire)]);
      const order = oneOrderOf(model, {
        'first, then second': (copy) => {
          assert.equal(a.outcome, fireInModel(copy, fire, a.now), 'the first call');
          assert.equal(b.outcome, fireInModel(copy, fire, b.now), 'the second call');
        },
        'second, then first': (copy) => {
          assert.equal(b.outcome, fireInModel(copy, fire, b.now), 'the second call');
          assert.equal(a.outcome, fireInModel(copy, fire, a.now), 'the first call');
        },
      });
      rig.tally.note(`slot fired by two at once (${order})`);
      assert.ok([a.outcome, b.outcome].includes('moved'), 'one of two calls for one slot finds it moved');
    } else {
      const result = await rig.via(this.mode === 'lost' ? 'lost' : 'direct', 'scheduleFire', (backend) =>
        backend.schedules.fire(fire),
      );
      const outcome = fireInModel(model, fire, result.now);
      // A resent copy finds the slot moved on by its first copy, and writes nothing.
      assert.equal(result.outcome, this.mode === 'lost' ? 'moved' : outcome, `fire of ${fire.id} at ${fire.next}`);
      this.noted(rig, outcome, schedule);
      // A scheduler that planned a slot fires it when it comes due, and the
      // next one too when it comes before the run is taken (with overlap
      // 'skip', the run still pending, it is passed over).
      let previous = outcome;
      for (let calls = 0; this.mode === 'one' && calls < 2 && schedule.next !== 'end'; calls++) {
        if (previous !== 'advanced' && !(previous === 'fired' && schedule.overlap)) break;
        const planned = fireOf(schedule);
        const next = await store.fire(planned);
        previous = fireInModel(model, planned, next.now);
        assert.equal(next.outcome, previous, `fire of ${planned.id} at ${planned.next}`);
        this.noted(rig, previous, schedule);
      }
    }
    await assertSchedules(model, rig);
  }

  private noted(rig: ModelRig, outcome: FireOutcome, schedule: ModelSchedule): void {
    rig.tally.note(`schedule ${outcome}`);
    if (outcome === 'fired' && schedule.next === 'end') rig.tally.note('schedule ended at its limit');
  }

  toString(): string {
    return `fireSchedule(#${this.pick}, ${this.mode})`;
  }
}

/** Removes a schedule (or an id that has none). */
export class RemoveScheduleCommand extends ModelCommand {
  protected readonly kind = 'remove a schedule';

  constructor(readonly pick: number) {
    super();
  }

  override check(model: Readonly<RunModel>): boolean {
    return model.schedules.size > 0;
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const id = nth([...model.schedules.keys()], this.pick);
    assert.equal(await rig.backend.schedules.remove(id), true, `remove ${id}`);
    model.schedules.delete(id);
    await assertSchedules(model, rig);
  }

  toString(): string {
    return `removeSchedule(#${this.pick})`;
  }
}

/** The code schedules of the model: their queue is fixed by their id, so every form of one agrees. */
const CODE_IDS = [
  ['c0', 'q1'],
  ['c1', 'q2'],
  ['c2', 'q1'],
] as const;
/** A code form's settings: `d1` allows overlap, `d2` skips it and fires 3 runs at most. */
const CODE_FORMS: Record<string, { overlap: boolean; limit: number }> = {
  d1: { overlap: false, limit: 0 },
  d2: { overlap: true, limit: 3 },
};

/** A declaration of one process: each code id it holds with a form, and its module's queues. */
export interface DeclarationSpec {
  /** Per code id: the form declared (`d1`, `d2`), or undefined when the process's code lacks it. */
  readonly forms: readonly (string | undefined)[];
  /** Index into {@link QUEUES}-based selections: q1, q2 or both. */
  readonly queues: 0 | 1 | 2;
}

const STALE_MS = 3_600_000;

/** What `schedule-declare.lua` does, in the model; returns the conflicts (ids of run-time schedules). */
function declareInModel(
  model: RunModel,
  declared: readonly [string, QueueName, string][],
  queues: readonly QueueName[],
) {
  const conflicts: string[] = [];
  const apply = (id: string, queue: QueueName, form: string) => {
    let schedule = model.schedules.get(id);
    if (schedule?.source === 'api') return conflicts.push(id);
    if (!schedule) {
      schedule = {
        id,
        queue,
        digest: '',
        source: 'code',
        forms: [],
        stopped: true,
        overlap: false,
        limit: 0,
        next: '',
        runs: 0,
        skipped: 0,
        fired: new Map(),
      };
      model.schedules.set(id, schedule);
    }
    if (!schedule.forms.includes(form)) schedule.forms.push(form);
    const winner = schedule.forms.at(-1)!;
    if (winner === '-') {
      if (schedule.forms.length === 1) model.schedules.delete(id);
      else if (!schedule.stopped) Object.assign(schedule, { stopped: true, digest: '', next: '' });
    } else if (schedule.stopped || schedule.digest !== winner) {
      Object.assign(schedule, { stopped: false, digest: winner, next: '', queue, ...CODE_FORMS[winner] });
    }
    return undefined;
  };
  for (const [id, queue, form] of declared) apply(id, queue, form);
  const held = new Set(declared.map(([id]) => id));
  for (const schedule of [...model.schedules.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    if (held.has(schedule.id) || schedule.source !== 'code' || !queues.includes(schedule.queue)) continue;
    apply(schedule.id, schedule.queue, '-');
  }
  return conflicts;
}

/**
 * A process declares the schedules of its code (`schedule-declare.lua`): the
 * form first declared last is in force, one declared again changes nothing,
 * and a code schedule of its queues it lacks stops; run-time schedules of the
 * same ids are left alone.
 */
export class DeclareSchedulesCommand extends ModelCommand {
  protected readonly kind = 'declare code schedules';

  constructor(readonly spec: DeclarationSpec) {
    super();
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const queues: QueueName[] = [['q1'], ['q2'], ['q1', 'q2']][this.spec.queues] as QueueName[];
    const declared: [string, QueueName, string][] = [];
    CODE_IDS.forEach(([id, queue], i) => {
      const form = this.spec.forms[i];
      if (form !== undefined) declared.push([id, queue, form]);
    });
    const conflicts = await rig.backend.schedules.declare(
      declared.map(([id, queue, digest]) => ({ id, digest, def: JSON.stringify({ digest }), queue })),
      queues,
      STALE_MS,
    );
    const before = new Set([...model.schedules.values()].filter((s) => !s.stopped).map((s) => s.id));
    assert.deepEqual(
      conflicts.sort(),
      declareInModel(model, declared, queues).sort(),
      'the conflicts of a declaration',
    );
    const after = new Set([...model.schedules.values()].filter((s) => !s.stopped).map((s) => s.id));
    rig.tally.note('code schedule stopped', [...before].filter((id) => !after.has(id)).length);
    await assertSchedules(model, rig);
  }

  toString(): string {
    return `declareSchedules(${this.spec.forms.map((f) => f ?? '-').join(',')}; queues ${this.spec.queues})`;
  }
}

/** A scheduler reads the due schedules (`schedule-due.lua`): every live one (their slots are long past), none other. */
export class DueSchedulesCommand extends ModelCommand {
  protected readonly kind = 'read due schedules';

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const { due, nextDueAt } = await rig.backend.schedules.due(100);
    assert.deepEqual(
      due
        .map((s) => ({ id: s.id, next: s.next, runs: s.runs, digest: s.digest }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
      liveSchedules(model)
        .map((s) => ({ id: s.id, next: s.next, runs: s.runs, digest: s.digest }))
        .sort((a, b) => (a.id < b.id ? -1 : 1)),
      'the due schedules',
    );
    assert.equal(nextDueAt, null, 'no slot is planned after now');
  }

  toString(): string {
    return 'dueSchedules';
  }
}
