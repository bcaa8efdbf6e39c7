import type { RequeueableSegment, RequeueAllOptions } from '../../records/backend-records.js';
import { MAX_CHUNK_SIZE } from '../../records/backend-records.js';
import type { RedisClient } from './redis-client.js';
import { runScript } from './scripts/redis-scripts.js';

/**
 * The default of {@link RequeueAllOptions.chunkSize}: a run requeued costs
 * Redis a dozen commands, a few times a purged run's, so a chunk holds a
 * quarter as many for about the same time (docs/scale.md).
 */
export const REQUEUE_CHUNK_SIZE = 250;

/** What one `requeue-all.lua` call answers: its requeues and where the next call starts. */
type RequeueAllReply = [requeued: number, startMs: string, phase: number, name: string, done: number];

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
  const chunkSize = Math.min(Math.max(Math.floor(options.chunkSize ?? REQUEUE_CHUNK_SIZE), 1), MAX_CHUNK_SIZE);
  let position: (string | number)[] = ['', 1, ''];
  let total = 0;
  for (;;) {
    const { id, record } = next();
    const args = [id, queue, segment, chunkSize, ...position];
    const reply = (await runScript(client, 'requeueAll', keysFor(record), args)) as RequeueAllReply;
    const [requeued, startMs, phase, name, done] = reply;
    total += requeued;
    options.onProgress?.({ queue, segment, requeued: total, chunkRequeued: requeued, done: done === 1 });
    if (done === 1) return total;
    position = [startMs, phase, name];
  }
}
