import type { Logger } from '@nestjs/common';

/**
 * Logs the run ids a script found in a set (`segment`: ready, deferred,
 * running) without their run record, and removed: records are lost only when
 * Redis evicts or loses keys, which the log says how to prevent.
 */
export function reportGhosts(logger: Logger, segment: string, ghosts: readonly string[]): void {
  if (ghosts.length === 0) return;
  logger.error(
    `Found ${ghosts.length} run id(s) in a ${segment} set without their run record (${ghosts.slice(0, 5).join(', ')}` +
      `${ghosts.length > 5 ? ', …' : ''}); they were removed from the set. Run records are only lost when Redis ` +
      `evicts or loses keys: set maxmemory-policy noeviction and enable AOF.`,
  );
}
