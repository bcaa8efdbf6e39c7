import type { TaskBackend } from '../backend/task-backend.js';
import { storedRateLimit, type RateLimit } from './rate-limit.js';

/** Writes an application's `rateLimits` option to its backend (at boot). */
export async function writeRateLimits(
  backend: TaskBackend,
  limits: Readonly<Record<string, RateLimit>> | undefined,
): Promise<void> {
  for (const [queue, limit] of Object.entries(limits ?? {})) {
    await backend.setRateLimit(queue, storedRateLimit(queue, limit));
  }
}
