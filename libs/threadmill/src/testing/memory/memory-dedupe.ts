import type { NewRun } from '../../backend/task-backend.js';
import { debouncedDue, dropKeyHolds, type KeyRunState } from '../../rules/dedupe-rules.js';
import type { MemoryRuns } from './memory-runs.js';

/** How long a key outlives its hold, its run's due time and its last use, as `lua/includes/dedupe.lua` keeps it. */
const DEDUPE_KEEP_MS = 86_400_000;

/** A deduplication key: the run it holds, as the Redis backend's `q:<queue>:dedupe:<key>` STRING. */
interface MemoryDedupeKey {
  readonly runId: string;
  readonly firstAt: number;
  readonly holdMs: number;
  readonly releaseOn: 'start' | 'finish';
  expiresAt: number;
}

/**
 * The deduplication keys of the in-memory backend, with the semantics of the
 * enqueue script's (`lua/includes/dedupe.lua`): whether a key holds is read
 * from its run's state at each enqueue that names it.
 */
export class MemoryDedupeKeys {
  private readonly keys = new Map<string, MemoryDedupeKey>();

  /**
   * Deduplicates `run` (which has a `dedupe`) at `now`: the id of the run its
   * key holds (a debounce gives that run its payload and due time), or
   * undefined when `run` is to be stored, having taken the key.
   */
  apply(state: MemoryRuns, run: NewRun, now: number): string | undefined {
    const dedupe = run.dedupe!;
    const name = `${run.queue}\u0000${dedupe.key}`;
    let key = this.keys.get(name);
    if (key && key.expiresAt <= now) {
      this.keys.delete(name);
      key = undefined;
    }
    if (key) {
      const held = state.runs.get(key.runId);
      const where = runState(state, key.runId, run.queue);
      if (dedupe.mode === 'drop') {
        const { byTime, byState } = dropKeyHolds({ ...key, untilFinish: key.releaseOn === 'finish' }, where, now);
        if (byTime || byState) {
          key.expiresAt = Math.max(key.expiresAt, keptUntil(now, key.firstAt + key.holdMs));
          return key.runId;
        }
      } else {
        const queue = state.queue(run.queue);
        if (where === 'waiting' && held && queue.deferred.has(key.runId)) {
          const due = debouncedDue(now, dedupe.ttlMs, key.firstAt, dedupe.maxWaitMs);
          held.fields['payload'] = run.payload;
          held.fields['runAfter'] = String(due);
          queue.deferred.set(key.runId, due);
          key.expiresAt = Math.max(key.expiresAt, keptUntil(now, due));
          return key.runId;
        }
      }
    }
    const holdMs = dedupe.mode === 'drop' ? dedupe.ttlMs : 0;
    const due = run.runAt > 0 ? run.runAt : run.delayMs > 0 ? now + run.delayMs : 0;
    this.keys.set(name, {
      runId: run.id,
      firstAt: now,
      holdMs,
      releaseOn: dedupe.mode === 'drop' ? dedupe.releaseOn : 'start',
      expiresAt: keptUntil(now, Math.max(now + holdMs, due)),
    });
    return undefined;
  }
}

function keptUntil(now: number, untilAt: number): number {
  return now + DEDUPE_KEEP_MS + Math.max(0, untilAt - now);
}

/** Where the run `id` a key names stands: another queue's run of that id reads as missing. */
function runState(state: MemoryRuns, id: string, queue: string): KeyRunState {
  const run = state.runs.get(id);
  if (run?.queue !== queue) return 'missing';
  if (run.settled) return 'settled';
  if (run.lease) return 'leased';
  const attempts = run.fields['attempts'];
  return run.status === 'READY' && (attempts === undefined || attempts === '0') ? 'waiting' : 'active';
}
