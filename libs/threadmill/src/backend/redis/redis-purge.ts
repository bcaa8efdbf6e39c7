import type { PurgeOptions } from '../../records/backend-records.js';
import { MAX_CHUNK_SIZE } from '../../records/backend-records.js';
import type { RedisClient } from './redis-client.js';
import { runScript } from './scripts/redis-scripts.js';

/**
 * The default of {@link PurgeOptions.chunkSize}: a chunk of 1,000 fresh runs
 * takes Redis about 3 ms (docs/scale.md), well under the 10 ms one call may
 * hold it, whatever the queue's size.
 */
export const PURGE_CHUNK_SIZE = 1000;

/** What one `purge.lua` call answers: its removals and where the next call starts. */
type PurgeReply = [
  removed: number,
  boundary: string,
  startMs: string,
  phase: number,
  cursor: string,
  name: string,
  done: number,
];

/**
 * Purges `queue` by calling `purge.lua` until it answers done, each call a
 * bounded chunk (see the script's header for what a purge removes). The
 * first call fixes the boundary (the enqueue sequence and the Redis clock at
 * its start) and every later call is given it back, so what interleaves
 * between chunks (enqueues, claims, acknowledgements) is judged against the
 * same start.
 * @param next gives each call its own call id and record slot (a resent copy answers as its first did)
 */
export async function purgeInChunks(
  client: RedisClient,
  queue: string,
  keysFor: (callRecord: string) => string[],
  next: () => { id: string; record: string },
  options: PurgeOptions = {},
): Promise<number> {
  const chunkSize = Math.min(Math.max(Math.floor(options.chunkSize ?? PURGE_CHUNK_SIZE), 1), MAX_CHUNK_SIZE);
  let position: (string | number)[] = ['', '', 1, '0', ''];
  let total = 0;
  for (;;) {
    const { id, record } = next();
    const reply = (await runScript(client, 'purge', keysFor(record), [
      id,
      queue,
      chunkSize,
      ...position,
    ])) as PurgeReply;
    const [removed, boundary, startMs, phase, cursor, name, done] = reply;
    total += removed;
    options.onProgress?.({ queue, removed: total, chunkRemoved: removed, done: done === 1 });
    if (done === 1) return total;
    position = [boundary, startMs, phase, cursor, name];
  }
}
