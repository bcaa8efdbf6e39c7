import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { describeValue } from '../codec/describe-value.js';
import { itemLabel } from './enqueue-item.js';
import type { EnqueueOptions } from './enqueue-options.interface.js';

/** Longest partition key, in characters. */
const MAX_KEY_LENGTH = 200;

/**
 * What routes a run Threadmill names to its partition (see
 * `TaskBackend.newRunId`): its `partitionKey`, else the limit group of a
 * task with a limit (a group's runs must meet in one partition for its limit
 * to hold: each partition keeps its own groups), else its dedupe key (every
 * run of a dedupe key must meet in one partition), else nothing
 * (round-robin). Checks the option; nothing is written: a bad one throws
 * `InvalidEnqueueError` naming the item (`task`, `index`) and the fix.
 */
export function routingKey(
  options: EnqueueOptions,
  task: string,
  index: number | undefined,
  limitGroup?: string,
): string | undefined {
  const { partitionKey } = options;
  if (partitionKey === undefined) {
    if (limitGroup !== undefined) return limitGroup;
    const dedupeKey = (options.dedupe as { key?: unknown } | undefined)?.key;
    return typeof dedupeKey === 'string' ? dedupeKey : undefined;
  }
  const label = itemLabel(task, index);
  if (limitGroup !== undefined) {
    throw new InvalidEnqueueError(
      label,
      'partitionKey cannot be given to a task with a limit: its limit group routes its runs (one partition per ' +
        'group, so the limit holds). Leave partitionKey out.',
    );
  }
  if (typeof partitionKey !== 'string' || partitionKey.length === 0 || partitionKey.length > MAX_KEY_LENGTH) {
    throw new InvalidEnqueueError(
      label,
      `partitionKey must be a string of 1-${MAX_KEY_LENGTH} characters, got ${describeValue(partitionKey)}.`,
    );
  }
  if (options.id !== undefined) {
    throw new InvalidEnqueueError(
      label,
      'partitionKey cannot be combined with id: a caller-chosen id routes its run by itself. Give one of them.',
    );
  }
  if (options.dedupe !== undefined) {
    throw new InvalidEnqueueError(
      label,
      'partitionKey cannot be combined with dedupe: a dedupe key routes its runs by itself. Give one of them.',
    );
  }
  return partitionKey;
}
