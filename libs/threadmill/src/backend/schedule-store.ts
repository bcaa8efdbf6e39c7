/**
 * A schedule as stored: its definition (encoded by the scheduler), where its
 * next slot stands and what it fired. See `docs/schedules.md`.
 */
export interface StoredSchedule {
  readonly id: string;
  /** The definition (JSON of a `ScheduleSpec`), or null while the schedule is stopped (removed from the code). */
  readonly def: string | null;
  /** A hash of the definition: the version every fire is checked against. */
  readonly digest: string | null;
  /** `'code'`: declared by `@Task({ schedule })`; `'api'`: made by `TaskScheduler.upsert`. */
  readonly source: 'code' | 'api';
  /** The next slot as stored: `''` to plan, `'end'` when there is none, else epoch ms. */
  readonly next: string;
  /** Runs the schedule fired. */
  readonly runs: number;
  /** Slots it passed over (catch-up, overlap). */
  readonly skipped: number;
  /** The last slot fired (epoch ms), or null. */
  readonly lastSlot: number | null;
  /** The id of the last run fired, or null. */
  readonly lastRun: string | null;
  /** When the last run was fired (epoch ms, Redis clock), or null. */
  readonly lastAt: number | null;
  /** The worker that fired the last run, or null. */
  readonly lastBy: string | null;
}

/** One call of the fire script: what the caller read, and what to do. */
export interface ScheduleFire {
  readonly id: string;
  /** The digest and stored next slot the caller planned from: the call applies only if both still hold. */
  readonly digest: string;
  readonly next: string;
  /** The slot to fire (epoch ms), or null to only move the next slot on. */
  readonly slot: number | null;
  /** The run's id (one per schedule and slot). */
  readonly runId: string;
  /** The new next slot, or null when the schedule has none left. */
  readonly following: number | null;
  /** Slots this call passes over (catch-up). */
  readonly skipped: number;
  /** Do not fire while the previous run is pending or running (`overlap: 'skip'`). */
  readonly overlapSkip: boolean;
  /** Most runs the schedule fires, 0 for no limit. */
  readonly limit: number;
  readonly queue: string;
  readonly priority: number;
  /** Lease override in ms, or 0. */
  readonly leaseTtlMs: number;
  readonly payload: string;
  /** The caller's worker id. */
  readonly firedBy: string;
}

/** What a fire did (see `lua/schedule-fire.lua`). */
export type FireOutcome = 'fired' | 'moved' | 'advanced' | 'overlap' | 'limit' | 'exists';

/** A schedule one process's code declares. */
export interface ScheduleDeclaration {
  readonly id: string;
  readonly digest: string;
  readonly def: string;
  readonly queue: string;
}

/** The schedules due now, with the store's time and when the next one comes due. */
export interface DueSchedules {
  readonly now: number;
  /** Epoch ms of the next planned slot not returned, or null. */
  readonly nextDueAt: number | null;
  readonly due: readonly StoredSchedule[];
}

/**
 * Storage of schedules. Every change is one atomic step: any number of
 * processes may run schedules against one store, and each slot fires once.
 */
export interface ScheduleStore {
  /**
   * Declares the schedules of this process's code (see `lua/schedule-declare.lua`),
   * and that code schedules of `queues` it does not declare are not in its code.
   * @returns the ids among them that are run-time schedules (left alone)
   */
  declare(declarations: readonly ScheduleDeclaration[], queues: readonly string[], staleMs: number): Promise<string[]>;
  /** Creates or replaces a run-time schedule. */
  upsert(id: string, digest: string, def: string, queue: string): Promise<'created' | 'replaced' | 'unchanged'>;
  /** Removes a schedule; false when there was none. */
  remove(id: string): Promise<boolean>;
  /** Up to `limit` schedules due now, oldest slot first, then those with a next slot to plan. */
  due(limit: number): Promise<DueSchedules>;
  /** Fires one slot, or moves the next slot on, if the schedule is still as read. */
  fire(fire: ScheduleFire): Promise<{ outcome: FireOutcome; now: number }>;
  /** Every schedule with a definition, by id. */
  list(): Promise<StoredSchedule[]>;
}

/** A number field, or null when absent or empty. */
const number = (value: string | undefined) => (value === undefined || value === '' ? null : Number(value));

/** A stored schedule from its hash's fields. */
export function storedSchedule(id: string, fields: Readonly<Record<string, string>>): StoredSchedule {
  return {
    id,
    def: fields['def'] ?? null,
    digest: fields['digest'] ?? null,
    source: fields['source'] === 'api' ? 'api' : 'code',
    next: fields['next'] ?? '',
    runs: Number(fields['runs'] ?? 0),
    skipped: Number(fields['skipped'] ?? 0),
    lastSlot: number(fields['lastSlot']),
    lastRun: fields['lastRun'] ?? null,
    lastAt: number(fields['lastAt']),
    lastBy: fields['lastBy'] ?? null,
  };
}
