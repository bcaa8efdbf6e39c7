import type { LeasedRun } from '../task-backend.js';
import { RedisLeasedRun } from './leased-run.js';

/** The reap script's reply (see `lua/reap.lua`). */
export type ReapReply = [now: number, runs: unknown[], ghosts: string[], nextDeadline: number, returned: number];

/** Values per run claimed for the broker in a reap reply. */
const RUN_VALUES = 10;

/**
 * The runs a reap claimed for the broker: started attempts whose lease
 * expired, each under the reap call's token until `now + claimTtlMs`.
 */
export function reapedRuns(now: number, flat: unknown[], queues: readonly string[], claimTtlMs: number): LeasedRun[] {
  const runs: LeasedRun[] = [];
  for (let i = 0; i < flat.length; i += RUN_VALUES) {
    runs.push(
      new RedisLeasedRun(
        flat[i] as string,
        queues[(flat[i + 1] as number) - 1]!,
        flat[i + 2] as string,
        now + claimTtlMs,
        flat[i + 3] as string,
        Number(flat[i + 7]),
        now,
        flat[i + 4] as number,
        flat[i + 8] ? Number(flat[i + 8]) : null,
        flat[i + 9] as number,
        flat[i + 5] as string,
        flat[i + 6] as string,
      ),
    );
  }
  return runs;
}
