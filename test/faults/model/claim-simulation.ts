import { rotateClaim } from '../../../libs/threadmill/src/backend/claim-rotation.js';
import { roomUnder } from '../../../libs/threadmill/src/rules/run-rules.js';
import { groupLogKey, groupLogOf, groupRunning, groupsLookedAt, groupTask } from './group-model.js';
import { cloneModel, readyIds, roomOf, scoreOf, unparkedIds, type QueueName, type RunModel } from './run-model.js';

/**
 * What `claim.lua` does with a model's runs (see `lua/includes/claim-groups.lua`):
 * per queue, its room under its cap and rate limit; a grouped queue first
 * un-parks, per group, at most its allowance of its first parked runs; then
 * the rotation (`rotateClaim`) takes each queue's ready runs in order, a share at
 * a time, and leases a run of a limit group only while its group has
 * allowance and none of its parked runs comes before it, parking the others.
 * Every group with parked runs and allowance is due at the claim's start in
 * the model (its times are far from now: a group held by its rate is due
 * only once its log frees a place), so the claim looks at all of them.
 *
 * Applies the parks, un-parks, group logs and notes to `model` (not the
 * leases: `applyClaim` does); returns the ids each queue leases, in order, and
 * where the rotation stopped.
 */
export function simulateClaim(
  model: RunModel,
  queues: readonly QueueName[],
  want: number,
  offset: number,
): { leased: Map<QueueName, string[]>; next: number } {
  const now = Date.now();
  const leased = new Map<QueueName, string[]>();
  const room = new Map<QueueName, number>();
  const order = new Map<QueueName, string[]>();
  const active = new Set<QueueName>();
  /** Per `<queue>\t<group>`: what the claim may still lease of it, and its first parked run's score. */
  const groups = new Map<string, { capLeft: number; rateLeft: number; heldMin?: number }>();
  const stateOf = (queue: QueueName, group: string) => {
    const key = groupLogKey(queue, group);
    let state = groups.get(key);
    if (!state) {
      const limit = model.taskLimits.get(groupTask(group));
      const parked = readyIds(model, queue).filter(
        (id) => model.runs.get(id)!.parked && model.runs.get(id)!.group === group,
      );
      state = {
        capLeft: roomUnder({ concurrency: limit?.concurrency }, groupRunning(model, queue, group), 0),
        rateLeft: roomUnder({ max: limit?.max }, 0, groupLogOf(model, queue, group).length),
        ...(parked.length > 0 ? { heldMin: scoreOf(model.runs.get(parked[0]!)!) } : {}),
      };
      groups.set(key, state);
    }
    return state;
  };
  for (const queue of queues) {
    if (model.paused.has(queue)) continue;
    groupsLookedAt(model, queue);
    room.set(queue, roomOf(model, queue));
    if (model.grouped.has(queue)) {
      // Un-park what each group may lease: its first parked runs.
      const parkedGroups = new Set(
        readyIds(model, queue)
          .map((id) => model.runs.get(id)!)
          .filter((run) => run.parked)
          .map((run) => run.group!),
      );
      for (const group of parkedGroups) {
        const state = stateOf(queue, group);
        const parked = readyIds(model, queue).filter(
          (id) => model.runs.get(id)!.parked && model.runs.get(id)!.group === group,
        );
        const n = Math.min(state.capLeft, state.rateLeft, parked.length);
        for (const id of parked.slice(0, n)) delete model.runs.get(id)!.parked;
        if (n > 0) model.notes.push('claim un-parked runs of a limit group');
        const rest = parked.slice(n);
        if (rest.length > 0) state.heldMin = scoreOf(model.runs.get(rest[0]!)!);
        else delete state.heldMin;
      }
    }
    order.set(queue, unparkedIds(model, queue));
    leased.set(queue, []);
    if (room.get(queue) !== 0) active.add(queue);
  }
  // The rotation is the library's rule (`rotateClaim`, as includes/claim-rotation.lua); what a queue gives is the model's.
  const serve = (q: number, share: number): readonly [number, boolean] => {
    const queue = queues[q]!;
    const take = Math.min(share, room.get(queue)!);
    const ready = order.get(queue)!;
    const popped = ready.splice(0, take);
    let leasedHere = 0;
    for (const id of popped) {
      const run = model.runs.get(id)!;
      if (run.group !== undefined) {
        model.grouped.add(queue);
        const state = stateOf(queue, run.group);
        const score = scoreOf(run);
        if (Math.min(state.capLeft, state.rateLeft) <= 0 || (state.heldMin !== undefined && state.heldMin < score)) {
          run.parked = true;
          if (state.heldMin === undefined || score < state.heldMin) state.heldMin = score;
          model.notes.push(
            state.capLeft <= 0
              ? "claim held back by a limit group's cap"
              : state.rateLeft <= 0
                ? "claim held back by a limit group's rate"
                : 'claim parked a run behind its parked group',
          );
          continue;
        }
        state.capLeft -= 1;
        state.rateLeft -= 1;
        if (model.taskLimits.get(groupTask(run.group))?.max !== undefined) {
          const key = groupLogKey(queue, run.group);
          model.groupLogs.set(key, [...(model.groupLogs.get(key) ?? []), now]);
        }
        model.notes.push('run of a limit group leased');
      }
      leased.get(queue)!.push(id);
      leasedHere += 1;
    }
    room.set(queue, room.get(queue)! - leasedHere);
    return [leasedHere, !(popped.length < take || room.get(queue) === 0)];
  };
  const { next } = rotateClaim(
    queues.map((queue) => active.has(queue)),
    want,
    offset,
    serve,
  );
  return { leased, next };
}

/**
 * The ready runs of `queue` a claim of it alone may take, in the order it
 * must take them: none while the queue is paused; no more than its room; of
 * a limit group, no more than the group's.
 */
export function claimableIds(model: RunModel, queue: QueueName): string[] {
  if (model.paused.has(queue)) return [];
  return simulateClaim(cloneModel(model), [queue], Infinity, 0).leased.get(queue) ?? [];
}
