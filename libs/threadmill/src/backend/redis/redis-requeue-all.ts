import type { RequeueableSegment, RequeueAllOptions } from '../../records/backend-records.js';
import { callInChunks, chunkSizeOf } from './chunked-call.js';
import type { RedisClient } from './redis-client.js';

/**
 * The default of {@link RequeueAllOptions.chunkSize}: a run requeued costs
 * Redis a dozen commands, a few times a purged run's, so a chunk holds a
 * quarter as many for about the same time (docs/scale.md).
 */
export const REQUEUE_CHUNK_SIZE = 250;

/**
 * Requeues the runs of `segment` of `queue` by calling `requeue-all.lua` until
 * it answers done, each call a bounded chunk (see the script's header for
 * which runs). The first call fixes the start (the Redis clock) and every
 * later call is given it back, so runs that finish between chunks are judged
 * against the same start.
 * @param next gives each call its own call id and record slot (a resent copy answers as its first did)
 */
export async function requeueInChunks(
  client: RedisClient,
  queue: string,
  segment: RequeueableSegment,
  keysFor: (callRecord: string) => string[],
  next: () => { id: string; record: string },
  options: RequeueAllOptions = {},
): Promise<number> {
  return callInChunks(client, {
    script: 'requeueAll',
    keysFor,
    next,
    args: [queue, segment, chunkSizeOf(options.chunkSize, REQUEUE_CHUNK_SIZE)],
    // startMs, phase, name: the script fixes them at the first call.
    start: ['', 1, ''],
    onChunk: (total, requeued, done) =>
      options.onProgress?.({ queue, segment, requeued: total, chunkRequeued: requeued, done }),
  });
}
