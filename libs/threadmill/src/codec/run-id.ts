import { getRandomValues } from 'node:crypto';
import { v7 } from 'uuid';

const POOL_BYTES = 8_192;
const pool = new Uint8Array(POOL_BYTES);
let offset = POOL_BYTES;
const random = new Uint8Array(16);

/**
 * 16 random bytes for one id, served from a pool refilled 512 ids at a time:
 * drawing them one id at a time is a system call per id, and was the
 * costliest step of an enqueue (docs/optimisations.md, step 6). They are
 * copied into one reused array, which `v7` reads before the next id is made
 * (a view of the pool per id was garbage).
 */
function pooledRandom(): Uint8Array {
  if (offset + 16 > POOL_BYTES) {
    getRandomValues(pool);
    offset = 0;
  }
  for (let i = 0; i < 16; i++) random[i] = pool[offset + i]!;
  offset += 16;
  return random;
}

const V7_OPTIONS = { rng: pooledRandom };
const bytes = new Uint8Array(16);

/** ASCII codes of each byte's two hex digits: HEX_DIGITS[2b] and HEX_DIGITS[2b + 1]. */
const HEX_DIGITS = Buffer.from(
  Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0')).join(''),
  'latin1',
);
/** Where each byte's first hex digit goes in the 8-4-4-4-12 text. */
const DIGIT_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/** The text of the id being made; the dashes never change. */
const text = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

/**
 * A new run id: a UUIDv7, time-ordered to the millisecond.
 *
 * `uuid` makes the bytes; the text is written here into one reused buffer
 * and read out as one string. `uuid`'s own formatting joined 17 pieces and
 * lower-cased the result, a large share of the garbage a bulk enqueue made
 * per run (docs/optimisations.md, step 35).
 */
export function newRunId(): string {
  v7(V7_OPTIONS, bytes);
  for (let i = 0; i < 16; i++) {
    const b = bytes[i]! * 2;
    const at = DIGIT_AT[i]!;
    text[at] = HEX_DIGITS[b]!;
    text[at + 1] = HEX_DIGITS[b + 1]!;
  }
  return text.toString('latin1', 0, 36);
}
