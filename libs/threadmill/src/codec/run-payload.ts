import { decodeJson, encodeJson } from './json-codec.js';

/**
 * The stored description of a run: written once at enqueue and never
 * rewritten (lease, status and result fields sit beside it in Redis).
 *
 * Runs are stored as a JSON array, `["<task>",[<args>]]`, with the priority
 * as a third element when it is not the default 0 (or when headers follow)
 * and the producer's trace context as a fourth, an object of headers, when it
 * has one: the envelope holds only
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
  /**
   * The producer's trace context (`traceparent`, `tracestate`), when it had an
   * active span and an OpenTelemetry SDK: the envelope's fourth element.
   */
  readonly headers?: Readonly<Record<string, string>>;
}

/** `["<name>",` per task name: a bulk enqueue encodes the same head for every run. */
const heads = new Map<string, string>();

/**
 * Encodes a run payload; throws `PayloadSerializationError` for arguments JSON
 * cannot carry. The text is JSON.stringify output throughout, so it holds no
 * raw newline (see `NewRun.singleLine`).
 * @param headers the producer's trace context as a JSON object (`traceHeaders()`), if any
 */
export function encodeRunPayload(task: string, priority: number, args: readonly unknown[], headers?: string): string {
  const encodedArgs = encodeJson(args, 'args');
  let head = heads.get(task);
  if (head === undefined) {
    head = `[${JSON.stringify(task)},`;
    heads.set(task, head);
  }
  if (headers !== undefined) return `${head}${encodedArgs},${priority},${headers}]`;
  return priority === 0 ? `${head}${encodedArgs}]` : `${head}${encodedArgs},${priority}]`;
}

const REFUSAL =
  'payload is not a Threadmill run envelope (["<task>",[...args]] or {"v":1,"task":...,"args":[...]}): ' +
  'it was altered in Redis or written by something other than Threadmill';

/** Decodes a stored payload of either form; throws when it is not JSON or not an envelope. */
export function decodeRunPayload(text: string): RunPayload {
  const decoded = decodeJson<unknown>(text);
  if (Array.isArray(decoded)) {
    const [task, args, priority, headers] = decoded as [unknown, unknown, unknown, unknown];
    // Elements after the priority are left for later versions to define: a
    // run they write still reads here, as runs with unknown keys do in the
    // object form.
    if (typeof task !== 'string' || !Array.isArray(args) || (priority !== undefined && !Number.isInteger(priority))) {
      throw new TypeError(REFUSAL);
    }
    const payload: { -readonly [K in keyof RunPayload]: RunPayload[K] } = { v: 2, task, args };
    if (priority) payload.priority = priority as number;
    // Headers are metadata: a value that is not an object of strings is ignored, not a reason to quarantine the run.
    if (isHeaders(headers)) payload.headers = headers;
    return payload;
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

function isHeaders(value: unknown): value is Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const key in value) if (typeof (value as Record<string, unknown>)[key] !== 'string') return false;
  return true;
}
