import { decodeJson, encodeJson } from '../codec/json-codec.js';

/**
 * The stored description of a run: written once at enqueue and never
 * rewritten (lease, status and result fields sit beside it in Redis).
 * `v` versions the envelope so a future format can still read old runs.
 *
 * The envelope holds only what Redis does not keep beside it: the queue is a
 * field of the run's record, and a priority is written only when it is not
 * the default 0. Envelopes written before carry both; they read the same.
 */
export interface RunPayload {
  readonly v: 1;
  readonly task: string;
  /** Absent for priority 0. */
  readonly priority?: number;
  readonly args: unknown[];
}

/** `{"v":1,"task":<name>,` per task name: a bulk enqueue encodes the same head for every run. */
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
    head = `{"v":1,"task":${JSON.stringify(task)},`;
    heads.set(task, head);
  }
  return priority === 0 ? `${head}"args":${encodedArgs}}` : `${head}"priority":${priority},"args":${encodedArgs}}`;
}

/** Decodes a stored payload; throws when it is not JSON or not a version-1 envelope. */
export function decodeRunPayload(text: string): RunPayload {
  const payload = decodeJson<RunPayload>(text);
  if (
    payload === null ||
    typeof payload !== 'object' ||
    payload.v !== 1 ||
    typeof payload.task !== 'string' ||
    !Array.isArray(payload.args)
  ) {
    throw new TypeError('payload is not a Threadmill v1 run envelope ({"v":1,"task":...,"args":[...]})');
  }
  return payload;
}
