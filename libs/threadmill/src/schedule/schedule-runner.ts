import { Logger } from '@nestjs/common';
import type { ScheduleDeclaration, ScheduleStore, StoredSchedule } from '../backend/schedule-store.js';
import { planSlot, slotRunId } from './schedule-plan.js';
import { ScheduleSlots } from './schedule-slots.js';
import type { ScheduleSpec } from './schedule-spec.js';

/**
 * Most due schedules one pass reads and fires or plans: due slots come first,
 * then schedules to plan, so a pass stays this size however many schedules
 * are new, and a due slot waits at most one pass behind them.
 */
export const DUE_BATCH = 500;
/** Most unreadable definitions remembered, so that each is logged once without holding one entry per schedule. */
const MAX_UNREADABLE = 1_000;
/** How often a process declares its code's schedules again (its declarations' heartbeat). */
export const DECLARE_EVERY_MS = 60_000;
/**
 * A declared form of a code schedule that no process declared for this long,
 * while another form was, is dropped (its processes are gone): see
 * `lua/schedule-declare.lua`.
 */
export const DECLARATION_STALE_MS = 5 * 60_000;
/** Most fire calls one schedule gets in a pass (a catch-up of `'all'` fires one slot per call). */
const MAX_FIRES_PER_PASS = 200;

/** How one process runs schedules: its code's declarations and its module's queues. */
export interface ScheduleRunnerSettings {
  /** The code's schedules, read at each declaration (discovery may not have run when the runner is made). */
  readonly declarations: () => readonly ScheduleDeclaration[];
  readonly queues: readonly string[];
  /** Who fires: the worker id recorded with each run fired (`lastBy`). */
  readonly firedBy: string;
}

/**
 * Runs the schedules of a backend in one process, in its broker's passes:
 * plans and fires every due slot. Any number of processes run one each, with
 * no leader: every fire is a compare-and-set on the schedule's stored next
 * slot (`lua/schedule-fire.lua`), so each slot fires once, whichever process
 * gets there first, and none is lost when a process dies (the others fire
 * it). The broker sleeps until the next slot; a schedule made or changed
 * meanwhile wakes it (the scripts add the broker's wake marker).
 */
export class ScheduleRunner {
  private readonly logger = new Logger('Threadmill');
  private declaredAt = -Infinity;
  /**
   * Digests of definitions this process cannot read, logged once. Nothing
   * else is kept per schedule: its slots are read from the definition at each
   * pass, with compiled cron expressions shared by expression and zone.
   */
  private readonly unreadable = new Set<string>();
  /** Run-time schedules whose id the code declares too, warned about once. */
  private readonly warned = new Set<string>();

  constructor(
    private readonly store: ScheduleStore,
    private readonly settings: ScheduleRunnerSettings,
  ) {}

  /** Declares this process's code schedules; repeated every {@link DECLARE_EVERY_MS}. */
  async declare(): Promise<void> {
    const { declarations, queues } = this.settings;
    const conflicts = await this.store.declare(declarations(), queues, DECLARATION_STALE_MS);
    this.declaredAt = Date.now();
    for (const id of conflicts) {
      if (this.warned.has(id)) continue;
      this.warned.add(id);
      this.logger.warn(
        `Schedule "${id}" is declared in the code but was made by TaskScheduler.upsert: the code's declaration ` +
          'is ignored. Remove it with TaskScheduler.remove to let the code declare it, or rename one of them.',
      );
    }
  }

  /**
   * One pass: declares the code's schedules when due, and fires what is due.
   * @returns how long until the next slot or declaration (ms), or null when
   *   neither is planned (a new schedule wakes the broker)
   */
  async pass(): Promise<number | null> {
    if (Date.now() - this.declaredAt >= DECLARE_EVERY_MS) await this.declare();
    const { now, nextDueAt, due } = await this.store.due(DUE_BATCH);
    // Schedules are independent (each call is a compare-and-set on its own
    // schedule): all of the batch go at once, in flight together on one
    // connection, so a pass costs a few round trips rather than one per schedule.
    const advanced = await Promise.allSettled(due.map((schedule) => this.advance(schedule, now)));
    let latest = now;
    let next = nextDueAt ?? Infinity;
    for (const result of advanced) {
      if (result.status === 'rejected') throw result.reason;
      latest = Math.max(latest, result.value.now);
      next = Math.min(next, result.value.next ?? Infinity);
    }
    if (due.length >= DUE_BATCH) return 0;
    const declaring =
      this.settings.declarations().length > 0 ? this.declaredAt + DECLARE_EVERY_MS - Date.now() : Infinity;
    const pause = Math.min(next - latest, declaring);
    return pause === Infinity ? null : Math.max(pause, 1);
  }

  /**
   * Fires a schedule's due slots, one call each; returns the Redis time of
   * the last call and when the schedule is next due (null: not any more; the
   * time of the call when another process moved it: read it again).
   */
  private async advance(read: StoredSchedule, readAt: number): Promise<{ now: number; next: number | null }> {
    const slots = this.slotsOf(read);
    if (!slots || read.digest === null) return { now: readAt, next: null };
    const { spec } = slots;
    let schedule = read;
    let now = readAt;
    for (let calls = 0; calls < MAX_FIRES_PER_PASS; calls++) {
      const plan = planSlot(schedule, slots, now);
      if (!plan) return { now, next: schedule.next === 'end' ? null : Number(schedule.next) };
      const result = await this.store.fire({
        id: schedule.id,
        digest: read.digest,
        next: schedule.next,
        slot: plan.slot,
        runId: slotRunId(schedule.id, plan.slot ?? 0),
        following: plan.following,
        skipped: plan.skipped,
        overlapSkip: spec.overlap === 'skip',
        limit: spec.limit ?? 0,
        queue: spec.queue,
        priority: spec.priority,
        leaseTtlMs: spec.leaseTtlMs,
        payload: spec.payload,
        firedBy: this.settings.firedBy,
      });
      now = result.now;
      if (result.outcome === 'moved') return { now, next: now };
      if (result.outcome === 'limit' || plan.following === null) return { now, next: null };
      const lastSlot = result.outcome === 'fired' ? plan.slot : schedule.lastSlot;
      schedule = { ...schedule, next: String(plan.following), lastSlot };
    }
    return { now, next: now };
  }

  /** The slots of a stored definition, or null (logged once) when this process cannot read it. */
  private slotsOf(schedule: StoredSchedule): ScheduleSlots | null {
    const { digest, def } = schedule;
    if (digest === null || def === null) return null;
    try {
      return new ScheduleSlots(JSON.parse(def) as ScheduleSpec);
    } catch (error) {
      if (!this.unreadable.has(digest)) {
        if (this.unreadable.size >= MAX_UNREADABLE) this.unreadable.clear();
        this.unreadable.add(digest);
        this.logger.error(`Schedule "${schedule.id}" cannot be read by this version: ${(error as Error).message}`);
      }
      return null;
    }
  }
}
