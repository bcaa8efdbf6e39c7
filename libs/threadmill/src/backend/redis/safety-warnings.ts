import type { Logger } from '@nestjs/common';

/**
 * The Redis safety warnings (AOF off, no `maxmemory`, eviction allowed) this
 * process and the processes that started it have logged, each as
 * `<server>|<warning>`. The server is Redis's `run_id`, which a restart
 * renews: a Redis started again (perhaps with other settings) is warned about
 * again. Every process of a pool connects at boot, a recycled one too, and a
 * `ThreadmillClient` beside a backend connects once more: without this, one
 * warning became a line per process, per recycle and per client.
 */
const logged = new Set<string>();

/** Logs `message` as a warning unless the warning `key` was logged before in this process group. */
export function warnOnce(logger: Logger, key: string, message: string): void {
  if (logged.has(key)) return;
  logged.add(key);
  logger.warn(message);
}

/** The warnings logged so far, for the processes this one starts (a pool's supervisor hands them to its members). */
export function loggedSafetyWarnings(): string[] {
  return [...logged];
}

/** Counts `keys` as logged: another process of the group (a pool member's supervisor) logged them. */
export function adoptSafetyWarnings(keys: Iterable<string>): void {
  for (const key of keys) logged.add(key);
}
