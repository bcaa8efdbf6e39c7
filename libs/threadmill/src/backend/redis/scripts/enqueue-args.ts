import type { NewRun, StoreOutcome } from '../../task-backend.js';

/**
 * The enqueue script's arguments for a batch (see `lua/enqueue.lua`): the
 * queue names, each distinct option set once, then the runs, each as id,
 * option set and payload. The runs of one call mostly share their options,
 * so a run costs 3 values instead of 8.
 *
 * Consecutive runs of one option set whose ids have one byte length travel
 * as one group, `+ set idLength idpayload\nidpayload…`: ioredis encodes every
 * argument on its own (its byte length, its framing, a piece of the command
 * string), so three arguments per run cost the producer several times what
 * one joined value does (docs/optimisations.md, step 33), and with ids of a
 * known length Redis searches once per run, for the newline that ends its
 * payload (step 34). A run whose
 * payload holds a newline (JSON escapes newlines; a payload written otherwise
 * may not) travels on its own, as `= id set payload`; a run marked
 * `singleLine` (every run the queue encodes) is not searched.
 *
 * `callId` names a call that holds ids the caller chose, so that a resent
 * copy answers what the first did; '' for a call of generated ids.
 *
 * A run with a `dedupe` travels on its own, as `d id set payload keyIndex
 * mode ttlMs maxWaitMs releaseOn group`, `keyIndex` its key's place among
 * the call's deduplication keys (`dedupeKeyIndex`), `group` its limit group or ''. Any other run of a
 * limit group travels on its own, as `g id set payload group`.
 */
export function encodeStore(
  callId: string,
  queues: readonly string[],
  runs: readonly NewRun[],
  queueIndex: (queue: string) => number,
  dedupeKeyIndex?: (run: NewRun) => number,
): (string | number)[] {
  const optionSets = new Map<string, number>();
  const optionArgs: (string | number)[] = [];
  const itemArgs: (string | number)[] = [];
  // The open group: its option set, its ids' byte length, its runs so far.
  let group: string[] = [];
  let groupSet = 0;
  let groupIdBytes = -1;
  const flush = (): void => {
    if (group.length === 0) return;
    itemArgs.push('+', groupSet, groupIdBytes, group.join('\n'));
    group = [];
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
    const dedupe = run.dedupe;
    if (dedupe !== undefined) {
      flush();
      itemArgs.push(
        'd',
        run.id,
        set,
        run.payload,
        dedupeKeyIndex!(run),
        dedupe.mode,
        dedupe.ttlMs,
        dedupe.maxWaitMs,
        dedupe.releaseOn === 'finish' ? 'f' : 's',
        run.limitGroup ?? '',
      );
      continue;
    }
    if (run.limitGroup !== undefined) {
      flush();
      itemArgs.push('g', run.id, set, run.payload, run.limitGroup);
      continue;
    }
    if (run.singleLine !== true && run.payload.includes('\n')) {
      flush();
      itemArgs.push('=', run.id, set, run.payload);
      continue;
    }
    const idBytes = Buffer.byteLength(run.id);
    if (set !== groupSet || idBytes !== groupIdBytes) {
      flush();
      groupSet = set;
      groupIdBytes = idBytes;
    }
    group.push(run.id + run.payload);
  }
  flush();
  return [callId, queues.length, ...queues, optionSets.size, ...optionArgs, ...itemArgs];
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

/**
 * The distinct deduplication keys of a batch (`keyName` names a run's), each
 * with its place among them (1 for the first): the enqueue script reads a
 * run's key by it (`dedupeKey(i)`, generated from lua/keys.mjs). Undefined
 * when no run has one.
 */
export function dedupeKeyPlaces(
  runs: readonly NewRun[],
  keyName: (run: NewRun) => string,
): { keys: string[]; indexOf: (run: NewRun) => number } | undefined {
  let places: Map<string, number> | undefined;
  for (const run of runs) {
    if (run.dedupe === undefined) continue;
    places ??= new Map();
    const key = keyName(run);
    if (!places.has(key)) places.set(key, places.size + 1);
  }
  if (!places) return undefined;
  const found = places;
  return { keys: [...found.keys()], indexOf: (run) => found.get(keyName(run))! };
}

/**
 * What the enqueue script's reply says of each run. It lists only the items
 * that were not stored (ids that existed). A fresh id is listed only when the
 * call was resent after a lost reply and its first copy stored the run (see
 * enqueue.lua): created all the same. (A resent call holding caller-chosen
 * ids or dedupe items answers as its first copy did.) A deduplicated item is
 * listed negated, followed by the id of the run its key holds.
 */
export function readStoreReply(runs: readonly NewRun[], reply: readonly (number | string)[]): StoreOutcome {
  const created = runs.map(() => true);
  let deduplicated: (string | undefined)[] | undefined;
  for (let i = 1; i < reply.length; i++) {
    const value = Number(reply[i]);
    if (value < 0) {
      const item = -value - 1;
      created[item] = false;
      (deduplicated ??= runs.map(() => undefined))[item] = String(reply[++i]);
      continue;
    }
    const item = value - 1;
    if (runs[item]!.idempotent) created[item] = false;
  }
  const now = Number(reply[0]);
  return deduplicated ? { now, created, deduplicated } : { now, created };
}
