import type { ChainableCommander } from 'ioredis';
import { isOutOfMemory } from '../../errors/redis-out-of-memory.error.js';
import type { RedisClient } from './redis-client.js';

/** Whether `error` is an EXEC Redis discarded because it refused to queue its commands for lack of memory. */
function refusedForMemory(error: unknown): boolean {
  const previous = (error as { previousErrors?: unknown[] }).previousErrors ?? [];
  return error instanceof Error && /EXECABORT/.test(error.message) && previous.some(isOutOfMemory);
}

/**
 * The replies of the reads `queue` adds, read in one MULTI, so that they see
 * one state. Redis out of memory refuses to queue any command of a MULTI,
 * reads too; then they are sent as one pipeline, in the order given, so that
 * an inspector still sees a full Redis: the caller orders them so that a run
 * moving meanwhile (fresh → done or run hash) is seen at its old place or at
 * its new one, never at neither.
 */
export async function readTogether(
  client: RedisClient,
  queue: (batch: ChainableCommander) => void,
): Promise<[error: Error | null, result: unknown][]> {
  const transaction = client.multi();
  queue(transaction);
  try {
    return (await transaction.exec()) ?? [];
  } catch (error) {
    if (!refusedForMemory(error)) throw error;
    const pipeline = client.pipeline();
    queue(pipeline);
    return (await pipeline.exec()) ?? [];
  }
}
