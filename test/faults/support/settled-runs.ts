import { TaskStatus, type TaskQueue } from '@threadmill/nestjs';
import { setTimeout as delay } from 'node:timers/promises';

/** The runs of a fault test that are gone, and those not SUCCESSFUL (`<id> <status>`). */
export interface SettledRuns {
  readonly lost: string[];
  readonly unfinished: string[];
}

/** Reads the statuses of `ids`, a thousand at a time. */
async function readStatuses(queue: TaskQueue, ids: readonly string[]): Promise<SettledRuns> {
  const lost: string[] = [];
  const unfinished: string[] = [];
  for (let first = 0; first < ids.length; first += 1_000) {
    const batch = ids.slice(first, first + 1_000);
    (await queue.getResults(batch)).forEach((result, i) => {
      if (result === null) lost.push(batch[i]!);
      else if (result.status !== TaskStatus.SUCCESSFUL) unfinished.push(`${batch[i]} ${result.status}`);
    });
  }
  return { lost, unfinished };
}

/**
 * The runs' own statuses once they settled: a witness records a run before
 * its worker's acknowledgement lands (and after a failover an acknowledgement
 * may be sent again once its master answers), so the statuses are read again
 * for up to `withinMs` while some are not SUCCESSFUL yet.
 */
export async function settledRuns(queue: TaskQueue, ids: readonly string[], withinMs = 30_000): Promise<SettledRuns> {
  let settled = await readStatuses(queue, ids);
  for (const deadline = Date.now() + withinMs; settled.unfinished.length > 0 && Date.now() < deadline;) {
    await delay(250);
    settled = await readStatuses(queue, ids);
  }
  return settled;
}
