import type { PurgeOptions } from '../../records/backend-records.js';
import { callInChunks, chunkSizeOf } from './chunked-call.js';
import type { RedisClient } from './redis-client.js';

/**
 * The default of {@link PurgeOptions.chunkSize}: a chunk of 1,000 fresh runs
 * takes Redis about 3 ms (docs/scale.md), well under the 10 ms one call may
 * hold it, whatever the queue's size.
 */
export const PURGE_CHUNK_SIZE = 1000;

/**
 * Purges `queue` by calling `purge.lua` until it answers done, each call a
 * bounded chunk (see the script's header for what a purge removes). The
 * first call fixes the boundary (the enqueue sequence and the Redis clock at
 * its start) and every later call is given it back, so what interleaves
 * between chunks (enqueues, claims, acknowledgements) is judged against the
 * same start.
 * @param next gives each call its own call id and record slot (a resent copy answers as its first did)
 * @param flowTtls what a purge of flow nodes settles is kept for: dependents it fails, flows it ends
 */
export async function purgeInChunks(
  client: RedisClient,
  queue: string,
  keysFor: (callRecord: string) => string[],
  next: () => { id: string; record: string },
  options: PurgeOptions,
  flowTtls: { readonly failed: number; readonly flow: number },
): Promise<number> {
  return callInChunks(client, {
    script: 'purge',
    keysFor,
    next,
    // The TTLs of what a purge of flow nodes settles: their dependents failed, their flows ended.
    args: [queue, chunkSizeOf(options.chunkSize, PURGE_CHUNK_SIZE), flowTtls.failed, flowTtls.flow],
    // boundary, startMs, phase, cursor, name: the script fixes them at the first call.
    start: ['', '', 1, '0', ''],
    onChunk: (total, removed, done) => options.onProgress?.({ queue, removed: total, chunkRemoved: removed, done }),
  });
}
