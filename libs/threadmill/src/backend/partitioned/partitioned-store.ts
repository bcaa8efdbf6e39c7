import { UnconfirmedEnqueueError } from '../../errors/unconfirmed-enqueue.error.js';
import type { NewRun, StoreOutcome } from '../task-backend.js';
import type { PartitionGroup } from './partition-groups.js';

/**
 * Stores a call's runs, one atomic script call per partition, in parallel,
 * and puts each partition's answer back in the call's order. A failure of
 * one partition after another stored is reported as the failed store it is
 * (docs/scale-out.md, "enqueueMany"). With `confirmEnqueues`, each
 * partition's share is confirmed by its own master: a share not confirmed
 * is stored all the same, and the call throws one `UnconfirmedEnqueueError`
 * naming those runs, once every share answered.
 */
export async function storeByPartition(
  runs: readonly NewRun[],
  groups: ReadonlyMap<number, PartitionGroup<NewRun>>,
  store: (partition: number, runs: readonly NewRun[]) => Promise<StoreOutcome>,
): Promise<StoreOutcome> {
  let now = 0;
  const created = runs.map(() => false);
  let deduplicated: (string | undefined)[] | undefined;
  let unconfirmed: UnconfirmedEnqueueError[] | undefined;
  await Promise.all(
    [...groups].map(async ([p, group]) => {
      let outcome: StoreOutcome;
      try {
        outcome = await store(p, group.items);
      } catch (error) {
        if (!(error instanceof UnconfirmedEnqueueError) || !error.outcome) throw error;
        (unconfirmed ??= []).push(error);
        outcome = error.outcome;
      }
      now = Math.max(now, outcome.now);
      group.places.forEach((place, i) => {
        created[place] = outcome.created[i]!;
        const answer = outcome.deduplicated?.[i];
        if (answer !== undefined) (deduplicated ??= Array.from({ length: runs.length }))[place] = answer;
      });
    }),
  );
  const outcome = deduplicated ? { now, created, deduplicated } : { now, created };
  if (!unconfirmed) return outcome;
  const runIds = runs.map((run, i) => deduplicated?.[i] ?? run.id);
  throw UnconfirmedEnqueueError.combine(runIds, unconfirmed, outcome);
}
