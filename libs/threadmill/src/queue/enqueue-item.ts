import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import type { EnqueueManyItem, EnqueueOptions } from './enqueue-options.interface.js';
import { describeValue } from '../codec/describe-value.js';

// The shape of an enqueue item and the checks on it that need no task
// definition: its option names, distinct caller-chosen ids, and how errors
// name an item and a bad value.

/**
 * The furthest a run may be deferred (`delayMs`, or `runAfter` from now):
 * 100 years. A longer deferral is a bug (a delay in microseconds, a
 * timestamp passed as a delay), and due times must stay exact integers in a
 * double, which a Lua script also prints as one.
 */
export const MAX_DEFERRAL_MS = 100 * 365 * 24 * 3_600_000;
export const MAX_DEFERRAL_TEXT = '100 years';

/** The options an enqueue item may carry besides its task, method and args. */
export const OPTION_KEYS = new Set([
  'runAfter',
  'delayMs',
  'priority',
  'queue',
  'id',
  'waitable',
  'dedupe',
  'partitionKey',
]);
/** What an enqueue item holds besides its options. */
const ITEM_FIELDS = ['task', 'method', 'args'] as const;

/**
 * Throws when an id a caller chose appears twice in one call. `idOf` gives
 * an entry's caller-chosen id, or `undefined` for a generated one.
 */
export function checkDistinctIds<T>(entries: readonly T[], idOf: (entry: T) => string | undefined): void {
  let seen: Set<string> | undefined;
  for (const entry of entries) {
    const id = idOf(entry);
    if (id === undefined) continue;
    seen ??= new Set<string>();
    if (seen.has(id)) {
      throw new InvalidEnqueueError(
        id,
        `the id "${id}" appears twice in one enqueueMany call; give each run its own id.`,
      );
    }
    seen.add(id);
  }
}

/**
 * The enqueue item of `enqueue(...)`: `fields` (task, method, args) with the
 * caller's options. Object.assign, not a spread: an object literal that
 * spreads one object and adds fields made garbage of its own per enqueue,
 * and an object the option check then walked slowly (docs/optimisations.md,
 * step 43). An option named like a field would
 * replace it, so it is refused (a spread ignored it).
 */
export function withOptions<I extends EnqueueManyItem>(fields: I, options: EnqueueOptions | undefined): I {
  if (options === undefined || options === null) return fields;
  if (typeof options !== 'object') return Object.assign(fields, options);
  for (const key of ITEM_FIELDS) {
    if (Object.hasOwn(options, key)) {
      const task =
        'method' in fields
          ? `${fields.task.name}.${String(fields.method)}`
          : typeof fields.task === 'string'
            ? fields.task
            : fields.task.name;
      throw new InvalidEnqueueError(task, `unknown option "${key}"; the options are ${[...OPTION_KEYS].join(', ')}.`);
    }
  }
  return Object.assign(fields, options);
}

/** How an error names the task of an item: with the item's index in a call of several. */
export function itemLabel(task: string, index: number | undefined): string {
  return index === undefined ? task : `${task} (item ${index})`;
}

/**
 * The ids of the runs whose items asked to be `waitable`, or undefined when
 * none did (the common case, which costs a property read per item).
 * `prepared[i]` is the run of `items[offset + i]`.
 * @throws InvalidEnqueueError when an item's `waitable` is not a boolean
 */
export function waitableIds(
  items: readonly EnqueueManyItem[],
  prepared: readonly { readonly run: { readonly id: string }; readonly definition: { readonly name: string } }[],
  offset = 0,
): string[] | undefined {
  let ids: string[] | undefined;
  for (let i = 0; i < prepared.length; i++) {
    const { waitable } = items[offset + i]!;
    if (waitable === undefined || waitable === false) continue;
    if (waitable !== true) {
      throw new InvalidEnqueueError(
        itemLabel(prepared[i]!.definition.name, items.length > 1 ? offset + i : undefined),
        `waitable must be a boolean, got ${describeValue(waitable)}.`,
      );
    }
    (ids ??= []).push(prepared[i]!.run.id);
  }
  return ids;
}
