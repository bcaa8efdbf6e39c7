import type { NewRun } from '../../task-backend.js';

/**
 * The enqueue script's arguments for a batch (see `lua/enqueue.lua`): the
 * queue names, each distinct option set once, then the runs, each as id,
 * option set and payload. The runs of one call mostly share their options,
 * so a run costs 3 values instead of 8.
 *
 * Consecutive runs travel joined by newlines in one argument,
 * `+ id\nset\npayload\n…`: ioredis encodes every argument on its own (its
 * byte length, its framing, a piece of the command string), which cost the
 * producer about 1.6 µs per run for three arguments against 0.2 µs for one
 * joined value, and Redis parses each argument as well. A run whose id or
 * payload holds a newline (a caller may choose such an id; JSON escapes
 * newlines) travels on its own, as `= id set payload`.
 */
export function encodeStore(
  queues: readonly string[],
  runs: readonly NewRun[],
  queueIndex: (queue: string) => number,
): (string | number)[] {
  const optionSets = new Map<string, number>();
  const optionArgs: (string | number)[] = [];
  const itemArgs: (string | number)[] = [];
  // The runs joined so far, not yet pushed as one `+` argument.
  let joined: string[] = [];
  const flush = (): void => {
    if (joined.length === 0) return;
    itemArgs.push('+', joined.join('\n'));
    joined = [];
  };
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
    // (A payload Threadmill encoded has no raw newline; one written otherwise may.)
    if (run.id.includes('\n') || run.payload.includes('\n')) {
      flush();
      itemArgs.push('=', run.id, set, run.payload);
    } else {
      joined.push(run.id, String(set), run.payload);
    }
  }
  flush();
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
