import type { LeasedRun, StoredTaskLimit } from '../../backend/task-backend.js';
import { groupTask } from '../../limits/task-limit.js';
import { inRateWindow, roomUnder } from '../../rules/run-rules.js';
import type { MemoryRun } from './memory-run.js';
import type { MemoryRuns } from './memory-runs.js';

/**
 * Task limits and their limit groups, in memory, with the semantics of the
 * Redis backend's claims (`lua/includes/claim-groups.lua`): a run of a group
 * (its `group` field, as the run hash holds it) is leased only while its
 * group has room under its task's limit (rate: fewer than `max` runs leased
 * within `perMs + startSlackMs`; concurrency: fewer runs of the group leased),
 * in ready order within the group; runs held back stay READY, uncharged, at
 * their place, and hold back no other group or task. Redis parks held-back
 * runs so that claims do not meet them again; here a claim scans the ready
 * order, which gives the same runs. A lease that ends frees its group's
 * place for the very next claim (Redis makes the group due at once:
 * `freeGroup` in `lua/includes/limit-groups.lua`).
 */
export class MemoryLimitGroups {
  /** Task → its limit (the Redis backend's `task-limits`). */
  readonly limits = new Map<string, StoredTaskLimit>();
  /** `<queue> <group>` → claim times of the runs of the group leased (its rate log). */
  private readonly logs = new Map<string, number[]>();

  /**
   * The ids of `ready` (a queue's ready order) a claim at `now` may lease,
   * in order: every run of no group, and the first runs of each group, as
   * many as it has room for.
   */
  admit(state: MemoryRuns, queue: string, ready: readonly string[], now: number): string[] {
    if (this.limits.size === 0) return [...ready];
    const room = new Map<string, number>();
    return ready.filter((id) => {
      const group = state.runs.get(id)!.fields['group'];
      if (group === undefined) return true;
      let left = room.get(group);
      if (left === undefined) left = this.room(state, queue, group, now);
      room.set(group, left - 1);
      return left > 0;
    });
  }

  /** A run of a group was leased at `now`: it joins the group's rate log, and must start within the slack. */
  leased(run: MemoryRun, leased: LeasedRun, now: number): void {
    const group = run.fields['group'];
    const rate = group === undefined ? undefined : this.limitOf(group)?.rate;
    if (rate === undefined) return;
    this.log(run.queue, group!, now).push(now);
    leased.startWithinMs = Math.min(rate.startSlackMs, leased.startWithinMs ?? rate.startSlackMs);
  }

  /**
   * An idle wait on `queues`, shortened to end when a group whose rate holds
   * back ready runs frees a place (as the Redis claim reply's free time does).
   */
  wait(state: MemoryRuns, queues: readonly string[], timeoutMs: number): number {
    if (this.limits.size === 0) return timeoutMs;
    const now = state.clock.now();
    let wait = timeoutMs;
    for (const queue of queues) {
      for (const id of state.queue(queue).ready.keys()) {
        const group = state.runs.get(id)?.fields['group'];
        const rate = group === undefined ? undefined : this.limitOf(group)?.rate;
        if (rate === undefined || this.room(state, queue, group!, now) > 0) continue;
        const oldest = this.log(queue, group!, now)[0];
        if (oldest !== undefined) wait = Math.min(wait, Math.max(1, oldest + rate.perMs + rate.startSlackMs - now + 1));
      }
    }
    return wait;
  }

  /**
   * A lease of `run` ended without an acknowledgement (deferred, cancelled;
   * an acknowledgement, a hand-back and a reap wake the queue already): while
   * runs of its group wait, the queue's idle consumers wake, as the Redis
   * scripts set its wake marker when they make the group due.
   */
  leaseEnded(state: MemoryRuns, run: MemoryRun): void {
    const group = run.fields['group'];
    if (group === undefined) return;
    const ready = [...state.queue(run.queue).ready.keys()];
    if (ready.some((id) => state.runs.get(id)?.fields['group'] === group)) state.wakeups.wake(run.queue);
  }

  /** Whether `queue` may hold runs of limit groups (its idle consumers are woken when a lease of it ends). */
  any(): boolean {
    return this.limits.size > 0;
  }

  /** How many more runs of `group` of `queue` may be leased at `now`. */
  private room(state: MemoryRuns, queue: string, group: string, now: number): number {
    const limit = this.limitOf(group);
    if (!limit) return Infinity;
    let running = 0;
    for (const id of state.queue(queue).running.keys()) {
      if (state.runs.get(id)?.fields['group'] === group) running++;
    }
    const logged = limit.rate ? this.log(queue, group, now).length : 0;
    return roomUnder({ concurrency: limit.concurrency, max: limit.rate?.max }, running, logged);
  }

  /** The limit of `group`'s task (the group's name up to its first newline). */
  private limitOf(group: string): StoredTaskLimit | undefined {
    return this.limits.get(groupTask(group));
  }

  /** The rate log of `group` of `queue`, its entries out of the window dropped. */
  private log(queue: string, group: string, now: number): number[] {
    const key = `${queue} ${group}`;
    let log = this.logs.get(key);
    if (!log) this.logs.set(key, (log = []));
    const rate = this.limitOf(group)?.rate;
    if (rate) {
      const window = rate.perMs + rate.startSlackMs;
      while (log.length > 0 && !inRateWindow(log[0]!, now, window)) log.shift();
    }
    return log;
  }
}
