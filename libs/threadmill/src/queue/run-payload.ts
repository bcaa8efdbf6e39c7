import { decodeJson, encodeJson } from '../codec/json-codec.js';

/**
 * The stored description of a run: written once at enqueue and never
 * rewritten (lease, status and result fields sit beside it in Redis).
 * `v` versions the envelope so a future format can still read old runs.
 */
export interface RunPayload {
  readonly v: 1;
  readonly task: string;
  readonly queue: string;
  readonly priority: number;
  readonly args: unknown[];
}

/** Encodes a run payload; throws `PayloadSerializationError` for arguments JSON cannot carry. */
export function encodeRunPayload(task: string, queue: string, priority: number, args: readonly unknown[]): string {
  const encodedArgs = encodeJson(args, 'args');
  return `{"v":1,"task":${JSON.stringify(task)},"queue":${JSON.stringify(queue)},"priority":${priority},"args":${encodedArgs}}`;
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
