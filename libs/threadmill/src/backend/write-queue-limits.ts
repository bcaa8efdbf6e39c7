import type { TaskBackend } from './task-backend.js';
import { storedRateLimit, type RateLimit } from '../limits/rate-limit.js';

/** The per-queue limits an application's options declare. */
export interface QueueLimits {
  readonly rateLimits?: Readonly<Record<string, RateLimit>>;
  readonly concurrencyCaps?: Readonly<Record<string, number>>;
}

/**
 * Writes an application's `rateLimits` and `concurrencyCaps` options to its
 * backend (at boot). A queue the options leave out keeps what Redis holds:
 * a limit set at run time through `TaskInspector` is only replaced by an
 * application that declares one for that queue.
 */
export async function writeQueueLimits(backend: TaskBackend, limits: QueueLimits): Promise<void> {
  for (const [queue, limit] of Object.entries(limits.rateLimits ?? {})) {
    await backend.setRateLimit(queue, storedRateLimit(queue, limit));
  }
  for (const [queue, cap] of Object.entries(limits.concurrencyCaps ?? {})) {
    await backend.setConcurrencyCap(queue, cap);
  }
}
