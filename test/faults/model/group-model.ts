import assert from 'node:assert/strict';
import type { ModelRig } from './redis-rig.js';
import { roomUnder } from '../../../libs/threadmill/src/rules/run-rules.js';
import { inWindow, QUEUES, RATE_WINDOW_MS, runsIn, type QueueName, type RunModel } from './run-model.js';

/** Limit groups in the model: their rate logs and leases, and what Redis holds of them. */

/** The key of a limit group's rate log in {@link RunModel.groupLogs}. */
export const groupLogKey = (queue: QueueName, group: string): string => `${queue}\t${group}`;

/** The task whose limit holds a group: its name up to the first newline. */
export const groupTask = (group: string): string => group.split('\n')[0]!;

/** The rate log of `group` of `queue`, its entries out of the window dropped (as `claim.lua` drops them). */
export function groupLogOf(model: RunModel, queue: QueueName, group: string): number[] {
  const key = groupLogKey(queue, group);
  const log = inWindow(model.groupLogs.get(key) ?? []);
  model.groupLogs.set(key, log);
  return log;
}

/** The runs of `group` of `queue` leased now: what its concurrency counts. */
export function groupRunning(model: RunModel, queue: QueueName, group: string): number {
  return runsIn(model, queue, 'running').filter((run) => run.group === group).length;
}

/**
 * A lease of `run` ended (an outcome, a hand-back, a reap, a deferral, a cancel): a run of a limit group frees
 * its group's place, and the scripts make the group due at once while it holds parked runs (`freeGroup` in
 * `lua/includes/limit-groups.lua`), until a claim of the queue looks at it.
 */
export function leaseEnded(model: RunModel, run: { queue: QueueName; group?: string }): void {
  if (run.group !== undefined) model.freedGroups.add(groupLogKey(run.queue, run.group));
}

/** A claim of `queue` looked at its groups (every due one: the model's are fewer than a claim looks at). */
export function groupsLookedAt(model: RunModel, queue: QueueName): void {
  for (const key of model.freedGroups) if (key.startsWith(`${queue}\t`)) model.freedGroups.delete(key);
}

/** How many more runs of `group` of `queue` a claim may lease now: its concurrency's and its rate's room. */
export function groupRoom(model: RunModel, queue: QueueName, group: string): number {
  const limit = model.taskLimits.get(groupTask(group)) ?? {};
  return roomUnder(limit, groupRunning(model, queue, group), groupLogOf(model, queue, group).length);
}

/** The parked runs of each limit group of the model's queues, in their held sets' order, as Redis holds them. */
export async function parkedRuns(rig: ModelRig): Promise<{ queue: QueueName; group: string; ids: string[] }[]> {
  const found = [];
  for (const queue of QUEUES) {
    const prefix = rig.backend.keys.group(queue, 'held', '');
    for (const key of (await rig.client.keys(`${prefix}*`)).sort()) {
      found.push({ queue, group: key.slice(prefix.length), ids: await rig.client.zrange(key, 0, -1) });
    }
  }
  return found;
}

/**
 * Asserts that `model` parks exactly the runs Redis parks (`parked`, read by
 * {@link parkedRuns}): of two orders of a race that both explain a claim's
 * reply, only the one that happened parks what Redis parked (a claim that ran
 * before an enqueue cannot have parked the new run; one after it may have).
 */
export function assertParkedAs(
  model: RunModel,
  parked: readonly { queue: QueueName; group: string; ids: readonly string[] }[],
): void {
  const modelled = [...model.runs.values()].filter((run) => run.status === 'ready' && run.parked).map((run) => run.id);
  const held = parked.flatMap(({ ids }) => ids);
  assert.deepEqual(modelled.sort(), [...held].sort(), 'the runs parked');
}

/** The entries in the window of each limit group's rate log of the model's queues, as Redis holds them. */
export async function groupLogSizes(rig: ModelRig): Promise<{ queue: QueueName; group: string; size: number }[]> {
  const found = [];
  const since = Date.now() - RATE_WINDOW_MS;
  for (const queue of QUEUES) {
    const prefix = rig.backend.keys.group(queue, 'starts', '');
    for (const key of (await rig.client.keys(`${prefix}*`)).sort()) {
      found.push({ queue, group: key.slice(prefix.length), size: await rig.client.zcount(key, `(${since}`, '+inf') });
    }
  }
  return found;
}

/**
 * After two claims whose copies interleaved: which ready runs are parked,
 * and the groups' rate logs, as Redis holds them (the copies park what the
 * model cannot know run by run).
 * Every parked run must be a ready run of its group in the model (none lost
 * or duplicated), and a group's log may hold no more than its limit allows.
 */
export async function syncGroups(model: RunModel, rig: ModelRig): Promise<void> {
  const parked = await parkedRuns(rig);
  for (const run of model.runs.values()) {
    if (run.status === 'ready') delete run.parked;
  }
  for (const { queue, group, ids } of parked) {
    for (const id of ids) {
      const run = model.runs.get(id);
      assert.ok(
        run?.status === 'ready' && run.queue === queue && run.group === group,
        `${id}, parked, is a ready run of ${group}`,
      );
      run.parked = true;
    }
  }
  for (const { queue, group, size } of await groupLogSizes(rig)) {
    const max = model.taskLimits.get(groupTask(group))?.max;
    const log = groupLogOf(model, queue, group);
    assert.ok(max === undefined || size <= Math.max(max, log.length), `the log of ${group} holds ${size} entries`);
    for (let i = log.length; i < size; i++) log.push(Date.now());
    log.length = size;
  }
}
