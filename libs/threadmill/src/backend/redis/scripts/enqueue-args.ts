import type { NewRun } from '../../task-backend.js';

/**
 * The enqueue script's arguments for a batch (see `lua/enqueue.lua`): the
 * queue names, each distinct option set once, then each run as id, option
 * set, payload. The runs of one call mostly share their options, so a run
 * costs 3 arguments instead of 8.
 */
export function encodeStore(
  queues: readonly string[],
  runs: readonly NewRun[],
  queueIndex: (queue: string) => number,
): (string | number)[] {
  const optionSets = new Map<string, number>();
  const optionArgs: (string | number)[] = [];
  const itemArgs: (string | number)[] = [];
  let previous: NewRun | undefined;
  let set = 0;
  for (const run of runs) {
    // A run with its predecessor's options takes its set without a lookup.
    if (previous === undefined || !sameOptions(previous, run)) {
      const option = [
        queueIndex(run.queue),
        run.priority,
        run.runAt,
        run.delayMs,
        run.leaseTtlMs,
        run.idempotent ? 1 : 0,
      ];
      const signature = option.join(',');
      const known = optionSets.get(signature);
      if (known === undefined) {
        set = optionSets.size + 1;
        optionSets.set(signature, set);
        optionArgs.push(...option);
      } else {
        set = known;
      }
    }
    previous = run;
    itemArgs.push(run.id, set, run.payload);
  }
  return [queues.length, ...queues, optionSets.size, ...optionArgs, ...itemArgs];
}

function sameOptions(a: NewRun, b: NewRun): boolean {
  return (
    a.queue === b.queue &&
    a.priority === b.priority &&
    a.runAt === b.runAt &&
    a.delayMs === b.delayMs &&
    a.leaseTtlMs === b.leaseTtlMs &&
    a.idempotent === b.idempotent
  );
}
