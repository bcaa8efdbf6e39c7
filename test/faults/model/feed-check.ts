import assert from 'node:assert/strict';
import type { ModelRig } from './redis-rig.js';
import type { RunModel } from './run-model.js';

/**
 * After each step: the entries the step's scripts added to `finished` are
 * exactly the registered runs it settled or removed, each once (none lost, none
 * repeated by a resent call), and one per stored report of a registered run,
 * and `waiting` holds exactly the runs still registered. Within a step, the order of a script's entries is its own.
 */
export async function assertPublished(model: RunModel, rig: ModelRig): Promise<void> {
  const { keys } = rig.backend;
  const [entries, waiting] = await Promise.all([
    rig.client.xrange(keys.finished, `(${rig.feedPosition}`, '+'),
    rig.client.zrange(keys.waiting, 0, -1),
  ]);
  const published = entries.map(([, fields]) => {
    const value = (name: string) => fields[fields.indexOf(name) + 1];
    if (fields[2] === 'reported') return `${value('id')} reported`;
    const removed = fields.includes('removed') ? value('removed') : undefined;
    return `${value('id')} ${removed === undefined ? value('status') : `removed:${removed}`}`;
  });
  if (entries.length > 0) rig.feedPosition = entries.at(-1)![0];
  for (const entry of published)
    rig.tally.note(`registered run published ${entry.slice(entry.indexOf(' ') + 1).replace(/:.*/, '')}`);
  assert.deepEqual(published.sort(), [...model.published].sort(), 'runs published to finished in this step');
  model.published = [];
  assert.deepEqual(waiting.sort(), [...model.watched].sort(), 'runs registered in waiting');
}
