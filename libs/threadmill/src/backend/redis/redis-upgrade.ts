import type { RedisClient } from './redis-client.js';
import { runScript } from './scripts/redis-scripts.js';

/**
 * Most entries one `upgrade.lua` call looks at: a chunk of this size takes
 * Redis a few milliseconds (docs/scale.md), however many keys the backend
 * holds.
 */
export const UPGRADE_CHUNK_SIZE = 2000;

/** How often a boot waiting for an upgrade says how far it is. */
const PROGRESS_EVERY_MS = 2_000;

/** What `upgrade.lua` answers. */
type UpgradeReply = [found: number, now: number, done: number, walk: number, looked: number];

/** What an upgrade of the storage layout found and left. */
export interface UpgradeOutcome {
  /** The version the keys had (0: keys that never stored a run, 1: unmarked). */
  readonly found: number;
  /** The version they are marked with now (found, when newer than this code's). */
  readonly now: number;
}

/**
 * Brings the keys to layout `target` by calling `upgrade.lua` until it
 * answers done, each call a bounded chunk, and so returns only once the
 * keys are wholly of the new layout: the code cannot serve keys part way
 * between two (a successful index may still be a set, or hold entries of
 * both forms). Processes that boot together each call it, and the calls
 * share one walk (its position is stored in Redis), so they finish it
 * together. `progress` is told how far the walk is every few seconds.
 */
export async function upgradeInChunks(
  client: RedisClient,
  keys: readonly string[],
  target: number,
  progress: (message: string) => void,
  chunkSize = UPGRADE_CHUNK_SIZE,
): Promise<UpgradeOutcome> {
  let looked = 0;
  let told = Date.now();
  for (;;) {
    const [found, now, done, walk, chunk] = (await runScript(client, 'upgrade', keys, [
      target,
      chunkSize,
    ])) as UpgradeReply;
    if (done === 1) return { found, now };
    looked += chunk;
    if (Date.now() - told >= PROGRESS_EVERY_MS) {
      told = Date.now();
      progress(
        `Upgrading the storage layout from ${found} to ${now}: step ${walk} of 4, ` +
          `${looked} entries looked at by this process so far; it serves once the upgrade is complete.`,
      );
    }
  }
}
