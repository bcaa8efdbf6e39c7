import { getRandomValues } from 'node:crypto';

const POOL_BYTES = 8_192;
const pool = new Uint8Array(POOL_BYTES);
let offset = POOL_BYTES;

/**
 * Most partitions a backend may have: a run id Threadmill makes names its
 * partition in its last two base32 digits (see `PartitionRouter`). Here, with
 * the id's format, so that the options' schema can bound `partitions` from
 * below the backend.
 */
export const MAX_PARTITIONS = 1024;

/** Crockford's base32 digits, in ASCII order: ids sort as their times do. */
const DIGITS = Buffer.from('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 'latin1');
/** The text of the id being made. */
const text = Buffer.alloc(26);

/**
 * A new run id: a ULID (https://github.com/ulid/spec), 26 characters, the
 * first 10 the time it was made in ms and the other 16 random (80 bits), so
 * ids sort by time to the millisecond and cannot collide.
 *
 * Every run's id is stored twice while it waits (its record's field and its
 * ready-list entry) and twice while its result is kept (its done record's
 * field and its successful-index entry): a ULID is 10 characters shorter
 * than a UUID's text, which puts a hash field in a smaller allocation class
 * (docs/optimisations.md, step 53).
 *
 * The random digits come from a pool of bytes refilled 512 ids at a time
 * (drawing them one id at a time is a system call per id, docs/optimisations.md,
 * step 6): each byte's low 5 bits are one uniform digit. The text is written
 * into one reused buffer and read out as one string (step 35).
 */
export function newRunId(): string {
  let time = Date.now();
  for (let i = 9; i >= 0; i--) {
    text[i] = DIGITS[time % 32]!;
    time = Math.floor(time / 32);
  }
  if (offset + 16 > POOL_BYTES) {
    getRandomValues(pool);
    offset = 0;
  }
  for (let i = 0; i < 16; i++) text[10 + i] = DIGITS[pool[offset + i]! & 31]!;
  offset += 16;
  return text.toString('latin1', 0, 26);
}
