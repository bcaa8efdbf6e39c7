import { getRandomValues } from 'node:crypto';
import { v7 } from 'uuid';

const POOL_BYTES = 8_192;
const pool = new Uint8Array(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * 16 random bytes for one id, served from a pool refilled 512 ids at a time:
 * drawing them one id at a time is a system call per id, and was the
 * costliest step of an enqueue.
 */
function pooledRandom(): Uint8Array {
  if (offset + 16 > POOL_BYTES) {
    getRandomValues(pool);
    offset = 0;
  }
  offset += 16;
  return pool.subarray(offset - 16, offset);
}

/** A new run id: a UUIDv7, time-ordered to the millisecond. */
export function newRunId(): string {
  return v7({ rng: pooledRandom });
}
