import { MAX_CHUNK_SIZE } from '../../records/backend-records.js';
import type { RedisClient } from './redis-client.js';
import type { LuaScriptName } from './scripts/lua-sources.generated.js';
import { runScript } from './scripts/redis-scripts.js';

/** A chunk size asked for, as a whole number from 1 to `MAX_CHUNK_SIZE`; `fallback` when none was. */
export function chunkSizeOf(asked: number | undefined, fallback: number): number {
  return Math.min(Math.max(Math.floor(asked ?? fallback), 1), MAX_CHUNK_SIZE);
}

/** How one chunked operation is called: its script, keys, leading arguments and first position. */
export interface ChunkedCall {
  readonly script: LuaScriptName;
  /** The keys of one call, given the slot of its call record. */
  readonly keysFor: (callRecord: string) => string[];
  /** Gives each call its own call id and record slot (a resent copy answers as its first did). */
  readonly next: () => { id: string; record: string };
  /** The arguments after the call id, before the position. */
  readonly args: readonly (string | number)[];
  /** The position of the first call: empty values, which the script fills in and answers. */
  readonly start: readonly (string | number)[];
  /** Told after each call: the total so far, this call's count, and whether it was the last. */
  readonly onChunk: (total: number, count: number, done: boolean) => void;
}

/**
 * Calls a chunked script (purge.lua, requeue-all.lua) until it answers done.
 * Each reply is `[count, ...position, done]`: the next call is given the
 * position back, so every call judges what interleaves against the start
 * the first call fixed. Returns the counts' total.
 */
export async function callInChunks(client: RedisClient, call: ChunkedCall): Promise<number> {
  let position = call.start;
  let total = 0;
  for (;;) {
    const { id, record } = call.next();
    const reply = (await runScript(client, call.script, call.keysFor(record), [id, ...call.args, ...position])) as (
      string | number
    )[];
    const count = reply[0] as number;
    const done = reply.at(-1) === 1;
    total += count;
    call.onChunk(total, count, done);
    if (done) return total;
    position = reply.slice(1, -1);
  }
}
