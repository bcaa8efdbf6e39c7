import { decodeJson, encodeJson } from '../codec/json-codec.js';

/**
 * The stored description of a run: written once at enqueue and never
 * rewritten (lease, status and result fields sit beside it in Redis).
 *
 * Runs are stored as a JSON array, `["<task>",[<args>]]`, with the priority
 * as a third element when it is not the default 0: the envelope holds only
 * what Redis does not keep beside it (the queue is a field of the run's
 * record), and an array spends no bytes on key names, which every pending
 * and every kept run would carry (docs/storage.md, "Run envelopes"). `v`
 * says which form a run was read from: 2 for the array, 1 for the object
 * form `{"v":1,"task":...,"args":[...]}` of runs stored before, which still
 * reads (with its legacy `queue` and `priority` fields).
 */
export interface RunPayload {
  readonly v: 1 | 2;
  readonly task: string;
  /** Absent for priority 0. */
  readonly priority?: number;
  readonly args: unknown[];
}

/** `["<name>",` per task name: a bulk enqueue encodes the same head for every run. */
const heads = new Map<string, string>();

/**
 * Encodes a run payload; throws `PayloadSerializationError` for arguments JSON
 * cannot carry. The text is JSON.stringify output throughout, so it holds no
 * raw newline (see `NewRun.singleLine`).
 */
export function encodeRunPayload(task: string, priority: number, args: readonly unknown[]): string {
  const encodedArgs = encodeJson(args, 'args');
  let head = heads.get(task);
  if (head === undefined) {
    head = `[${JSON.stringify(task)},`;
    heads.set(task, head);
  }
  return priority === 0 ? `${head}${encodedArgs}]` : `${head}${encodedArgs},${priority}]`;
}

const REFUSAL =
  'payload is not a Threadmill run envelope (["<task>",[...args]] or {"v":1,"task":...,"args":[...]}): ' +
  'it was altered in Redis or written by something other than Threadmill';

/** Decodes a stored payload of either form; throws when it is not JSON or not an envelope. */
export function decodeRunPayload(text: string): RunPayload {
  const decoded = decodeJson<unknown>(text);
  if (Array.isArray(decoded)) {
    const [task, args, priority] = decoded as [unknown, unknown, unknown];
    // Elements after the priority are left for later versions to define: a
    // run they write still reads here, as runs with unknown keys do in the
    // object form.
    if (typeof task !== 'string' || !Array.isArray(args) || (priority !== undefined && !Number.isInteger(priority))) {
      throw new TypeError(REFUSAL);
    }
    return priority ? { v: 2, task, args, priority: priority as number } : { v: 2, task, args };
  }
  const payload = decoded as RunPayload | null;
  if (
    payload === null ||
    typeof payload !== 'object' ||
    payload.v !== 1 ||
    typeof payload.task !== 'string' ||
    !Array.isArray(payload.args)
  ) {
    throw new TypeError(REFUSAL);
  }
  return payload;
}
