import assert from 'node:assert/strict';
import type { ModelRig } from './redis-rig.js';
import type { RunModel } from './run-model.js';

/**
 * Every deduplication key in Redis is one of the model's, naming the same
 * run with the same hold, its first enqueue within seconds of the model's (a
 * resent call's first copy wrote it a moment before the copy whose time the
 * model saw), and expiring no sooner than a day from now.
 */
export async function assertDedupeKeys(model: RunModel, rig: ModelRig): Promise<void> {
  const names = await rig.dedupeKeys();
  const prefix = `${rig.backend.keys.prefix}q:`;
  const stored = new Map<string, string>();
  const values = await Promise.all(names.map((name) => rig.client.get(name)));
  names.forEach((name, i) => {
    const [queue, key] = name.slice(prefix.length).split(':dedupe:');
    stored.set(`${queue} ${key}`, values[i]!);
  });
  assert.deepEqual([...stored.keys()].sort(), [...model.dedupe.keys()].sort(), 'the deduplication keys');
  for (const [name, key] of model.dedupe) {
    const [firstAt, holdMs, releaseOn, runId] = stored.get(name)!.split('|');
    assert.deepEqual(
      { holdMs: Number(holdMs), releaseOn, runId },
      { holdMs: key.holdMs, releaseOn: key.releaseOn, runId: key.runId },
      `deduplication key ${name}`,
    );
    assert.ok(Math.abs(Number(firstAt) - key.firstAt) < 10_000, `the first enqueue time of key ${name}`);
  }
}
