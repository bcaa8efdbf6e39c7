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

/** The stored schedules must be the model's: next slot, runs, skips and last run. */
async function assertSchedules(model: RunModel, rig: ModelRig): Promise<void> {
  const stored = await rig.backend.schedules.list();
  assert.deepEqual(
    stored.map((s) => ({ id: s.id, next: s.next, runs: s.runs, skipped: s.skipped, lastRun: s.lastRun })),
    [...model.schedules.values()]
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
    if (existing?.digest === digest) {
      assert.equal(answer, 'unchanged', `upsert of ${id}, unchanged`);
    } else {
      assert.equal(answer, existing ? 'replaced' : 'created', `upsert of ${id}`);
      const schedule = existing ?? { id, runs: 0, skipped: 0, fired: new Map<number, number>() };
      model.schedules.set(id, {
        ...schedule,
        queue: this.queue,
        digest,
        overlap: this.overlap,
        limit: this.limit,
        next: '',
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
    return [...model.schedules.values()].some((s) => s.next !== 'end');
  }

  protected async act(model: RunModel, rig: ModelRig): Promise<void> {
    const live = [...model.schedules.values()].filter((s) => s.next !== 'end');
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
