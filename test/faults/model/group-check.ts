import assert from 'node:assert/strict';
import type { ModelRig } from './redis-rig.js';
import { QUEUES, readyIds, type QueueName, type RunModel } from './run-model.js';
import { groupLogOf, groupLogSizes, groupRoom, groupTask, parkedRuns } from './group-model.js';

/**
 * The limit groups as Redis holds them (`lua/includes/limit-groups.lua`),
 * after every step:
 *
 * - each group's held set holds exactly the model's parked runs of it, in
 *   ready order, and a parked run is READY, uncharged (checked with every
 *   run), in no other segment (the ready order excludes it);
 * - each queue's parked counter counts them, and each group with parked runs
 *   is in its queue's `groups` index (so claims look at it again);
 * - every leased run of a group is in the group's running set (so its cap
 *   counts it until its lease ends);
 * - each group's rate log holds, in its window, the model's entries;
 * - each queue's `grouped` flag is set exactly when the model says, and
 *   every task's limit is the model's;
 * - each group a lease of which ended since a claim last looked at its
 *   queue's groups, holding parked runs and with room, is due at once (0 in
 *   its queue's `groups` index), so the next claim looks at it first (G5).
 */
export async function assertGroups(model: RunModel, rig: ModelRig): Promise<void> {
  const { client, backend } = rig;
  const { keys } = backend;
  const parked = await parkedRuns(rig);
  const stored = new Map(parked.map(({ queue, group, ids }) => [`${queue}\t${group}`, ids]));
  for (const queue of QUEUES) {
    const modelled = new Map<string, string[]>();
    for (const id of readyIds(model, queue)) {
      const run = model.runs.get(id)!;
      if (!run.parked) continue;
      const key = `${queue}\t${run.group}`;
      modelled.set(key, [...(modelled.get(key) ?? []), id]);
    }
    const [counter, flag, index] = await Promise.all([
      client.get(keys.parked(queue)),
      client.exists(keys.grouped(queue)),
      client.zrange(keys.groups(queue), 0, -1),
    ]);
    const count = [...modelled.values()].reduce((sum, ids) => sum + ids.length, 0);
    assert.equal(Number(counter ?? 0), count, `the parked counter of ${queue}`);
    assert.equal(flag === 1, model.grouped.has(queue), `the grouped flag of ${queue}`);
    for (const [key, ids] of modelled) {
      assert.deepEqual(stored.get(key) ?? [], ids, `the parked runs of ${JSON.stringify(key)}`);
      assert.ok(index.includes(key.slice(key.indexOf('\t') + 1)), `${JSON.stringify(key)} is in its queue's index`);
    }
    for (const { queue: q, group, ids } of parked) {
      if (q === queue) assert.deepEqual(ids, modelled.get(`${q}\t${group}`) ?? [], `Redis parks ${ids} in ${group}`);
    }
  }
  for (const key of model.freedGroups) {
    const [queue, group] = [key.slice(0, key.indexOf('\t')) as QueueName, key.slice(key.indexOf('\t') + 1)];
    if (!stored.has(key) || groupRoom(model, queue, group) === 0) continue;
    const score = await client.zscore(keys.groups(queue), group);
    assert.equal(score, '0', `${JSON.stringify(group)} of ${queue}, freed by the end of a lease, is due at once`);
    rig.tally.note('a limit group freed by the end of a lease is due at once');
  }
  for (const run of model.runs.values()) {
    if (run.group === undefined || run.status !== 'running') continue;
    const member = await client.sismember(keys.group(run.queue, 'running', run.group), run.id);
    assert.equal(member, 1, `leased run ${run.id} is in the running set of ${JSON.stringify(run.group)}`);
  }
  for (const { queue, group, size } of await groupLogSizes(rig)) {
    assert.equal(size, groupLogOf(model, queue, group).length, `the rate log of ${JSON.stringify(group)} in ${queue}`);
  }
  for (const [key, log] of model.groupLogs) {
    if (log.length === 0) continue;
    const [queue, group] = [key.slice(0, key.indexOf('\t')), key.slice(key.indexOf('\t') + 1)];
    const size = await client.zcard(keys.group(queue, 'starts', group));
    assert.ok(size >= log.length, `the rate log of ${JSON.stringify(group)} in ${queue} holds ${size} entries`);
  }
  const tasks = [
    ...new Set([
      ...model.taskLimits.keys(),
      ...[...model.runs.values()].flatMap((r) => (r.group ? [groupTask(r.group)] : [])),
    ]),
  ];
  const limits = await backend.taskLimits(tasks);
  tasks.forEach((task, i) => {
    const limit = limits[i];
    const read = limit && {
      ...(limit.rate ? { max: limit.rate.max } : {}),
      ...(limit.concurrency !== undefined ? { concurrency: limit.concurrency } : {}),
    };
    assert.deepEqual(read, model.taskLimits.get(task) ?? null, `the limit of ${task}`);
  });
}
