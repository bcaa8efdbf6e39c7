import { newRunId } from '../codec/run-id.js';
import type { NewRun } from '../backend/task-backend.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { PayloadSerializationError } from '../errors/payload-serialization.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { checkArguments } from '../task/task-arguments.js';
import { signatureProblem } from '../task/task-signature.js';
import { describeValue } from '../codec/describe-value.js';
import { itemLabel, MAX_DEFERRAL_MS, MAX_DEFERRAL_TEXT } from './enqueue-item.js';
import type { EnqueueManyItem } from './enqueue-options.interface.js';
import type { EnqueueTarget, EnqueueTargets } from './enqueue-target.js';
import { encodeRunPayload } from '../codec/run-payload.js';
import { runDedupe } from './dedupe-options.js';
import { limitGroup } from '../limits/task-limit.js';
import { routingKey } from './partition-key.js';

/**
 * Checks one enqueue item's options and arguments against its task and
 * encodes it as the run to store. Nothing is written: bad input throws
 * `InvalidEnqueueError` naming the item and what to fix.
 * @param headers the producer's trace context (`traceHeaders()`), carried in the envelope
 * @param newId names a run Threadmill names, routed by its key (`TaskBackend.newRunId`)
 */
export function buildRun(
  definition: EnqueueTarget,
  item: EnqueueManyItem,
  index: number | undefined,
  { queues, maxPayloadBytes }: Pick<ThreadmillOptions, 'queues' | 'maxPayloadBytes'>,
  headers?: string,
  newId: (key?: string) => string = newRunId,
): NewRun {
  const { runAfter, delayMs, priority = definition.priority, queue = definition.queue } = item;
  const idempotent = item.id !== undefined;
  const { id: chosenId } = item;
  if (idempotent && (typeof chosenId !== 'string' || chosenId.length === 0 || chosenId.length > 200)) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `id must be a string of 1-200 characters, got ${describeValue(chosenId)}.`,
    );
  }
  if (!Number.isInteger(priority) || priority < -100 || priority > 100) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `priority must be an integer from -100 to 100, got ${describeValue(priority)}.`,
    );
  }
  if (typeof queue !== 'string' || !queues.includes(queue)) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `queue ${describeValue(queue)} is not one of the module's queues (${queues.join(', ')})` +
        (definition.foreign
          ? '; this application does not register the task, so its runs go to the queue the enqueue names, ' +
            "else its contract's, else 'default': pass { queue } or enqueue its contract (defineTask)."
          : '.'),
    );
  }
  if (runAfter !== undefined && delayMs !== undefined) {
    throw new InvalidEnqueueError(itemLabel(definition.name, index), 'give either runAfter or delayMs, not both.');
  }
  if (runAfter !== undefined && (!(runAfter instanceof Date) || Number.isNaN(runAfter.getTime()))) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `runAfter must be a valid Date, got ${describeValue(runAfter)}.`,
    );
  }
  if (runAfter !== undefined && runAfter.getTime() > Date.now() + MAX_DEFERRAL_MS) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `runAfter must be at most ${MAX_DEFERRAL_TEXT} from now, got ${describeValue(runAfter)}.`,
    );
  }
  if (delayMs !== undefined && (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0)) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `delayMs must be a finite number >= 0, got ${describeValue(delayMs)}.`,
    );
  }
  if (delayMs !== undefined && delayMs > MAX_DEFERRAL_MS) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `delayMs must be at most ${MAX_DEFERRAL_MS} (${MAX_DEFERRAL_TEXT}), got ${describeValue(delayMs)}.`,
    );
  }
  const dedupe = runDedupe(item, itemLabel(definition.name, index));
  // Arity and primitive types, from the signature read at discovery (another application's task has none).
  const problem = definition.signature && signatureProblem(definition.signature, item.args);
  if (problem) throw new InvalidEnqueueError(itemLabel(definition.name, index), problem);
  // Only DTO parameters have anything to validate (the worker skips them alike).
  if (definition.argumentTypes.some(Boolean)) {
    const { problems } = checkArguments(definition.argumentTypes, item.args);
    if (problems.length > 0) {
      throw new InvalidEnqueueError(
        itemLabel(definition.name, index),
        `its arguments are invalid: ${problems.join(' | ')}. Fix the arguments.`,
      );
    }
  }
  // A task with a limit: its run's group, from its arguments (the producer's code computes it).
  const group =
    definition.limit && limitGroup(definition.name, definition.limit, item.args, itemLabel(definition.name, index));
  // Checked for every run (a partitionKey beside an id is refused), used for the ids Threadmill makes.
  const key = routingKey(item, definition.name, index, group);
  const id = idempotent ? chosenId! : newId(key);
  let payload: string;
  try {
    payload = encodeRunPayload(definition.name, priority, item.args, headers);
  } catch (error) {
    if (error instanceof PayloadSerializationError)
      throw new InvalidEnqueueError(itemLabel(definition.name, index), error.message);
    throw error;
  }
  // A UTF-16 unit takes at most 3 UTF-8 bytes: most payloads need no count.
  const bytes = payload.length * 3 <= maxPayloadBytes ? 0 : Buffer.byteLength(payload);
  if (bytes > maxPayloadBytes) {
    throw new InvalidEnqueueError(
      itemLabel(definition.name, index),
      `its payload is ${bytes} bytes, over maxPayloadBytes (${maxPayloadBytes}). ` +
        'Store large data elsewhere (a database, object storage) and pass a reference.',
    );
  }
  const run: NewRun = {
    id,
    queue,
    priority,
    runAt: runAfter ? runAfter.getTime() : 0,
    // A debounced run waits out its quiet period first.
    delayMs: dedupe?.mode === 'debounce' ? dedupe.ttlMs : delayMs ? Math.ceil(delayMs) : 0,
    leaseTtlMs: definition.leaseTtlMs ?? 0,
    payload,
    // JSON.stringify output (see encodeRunPayload): no raw newline.
    singleLine: true,
    idempotent,
  };
  const grouped = group === undefined ? run : { ...run, limitGroup: group };
  return dedupe ? { ...grouped, dedupe } : grouped;
}

/**
 * Checks every item's arguments against its task's signature before a
 * pipelined `enqueueMany` stores its first chunk, so that a wrong argument
 * count or type refuses the whole call rather than stopping it halfway.
 * Items that are not `{ task, args }` objects are left to `buildRun`'s
 * checks; DTO validation stays per chunk (it costs more than a `typeof`).
 * @throws UnknownTaskError, InvalidEnqueueError
 */
export function checkSignatures(items: readonly EnqueueManyItem[], targets: EnqueueTargets): void {
  for (let index = 0; index < items.length; index++) {
    const item = items[index];
    if (item === null || typeof item !== 'object' || !Array.isArray(item.args)) continue;
    const target = targets.resolve(item);
    const problem = target.signature && signatureProblem(target.signature, item.args);
    if (problem) throw new InvalidEnqueueError(itemLabel(target.name, index), problem);
  }
}
