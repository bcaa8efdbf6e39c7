export { ScriptKeys } from './script-keys.generated.js';

/** Indexes the distinct queues of a batch: scripts take their keys once per queue. */
export function indexQueues(items: readonly { queue: string }[]): { queues: string[]; index: Map<string, number> } {
  const index = new Map<string, number>();
  // A batch mostly holds runs of one queue in a row: skip the lookup for a repeat.
  let previous: string | undefined;
  for (const { queue } of items) {
    if (queue === previous) continue;
    previous = queue;
    if (!index.has(queue)) index.set(queue, index.size + 1);
  }
  return { queues: [...index.keys()], index };
}
