/**
 * What a schedule does when its previous run is still pending or running
 * when a slot comes due: `'allow'` fires the slot's run anyway, `'skip'`
 * passes the slot over (counted as skipped).
 */
export type ScheduleOverlap = 'allow' | 'skip';

/**
 * What a schedule does with slots that came due while no worker ran it (see
 * `docs/schedules.md`): `'none'` fires none of them (a slot late by more than
 * {@link SCHEDULE_GRACE_MS} is missed; the latest due slot still fires within
 * it), `'latest'` fires one run for the latest of them, `'all'` fires one run
 * for each, the latest {@link MAX_CATCH_UP} at most.
 */
export type ScheduleCatchUp = 'none' | 'latest' | 'all';

/** A slot later than this (ms) after its time counts as missed for `catchUp: 'none'`. */
export const SCHEDULE_GRACE_MS = 60_000;

/** Most missed slots `catchUp: 'all'` fires after an outage; older ones are passed over. */
export const MAX_CATCH_UP = 100;

/** The shortest `everyMs`. */
export const MIN_EVERY_MS = 100;

/** When a schedule fires: a cron expression or a fixed interval, and its bounds. */
export interface ScheduleTiming {
  /**
   * A cron expression (5 fields, or 6 with seconds first), read by `croner`
   * in time zone `tz`. Give either `cron` or `everyMs`.
   */
  cron?: string;
  /**
   * A fixed interval in ms (at least {@link MIN_EVERY_MS}); slots are the
   * multiples of it from `startAt` (else from the epoch), so every process
   * computes the same slots. Give either `cron` or `everyMs`.
   */
  everyMs?: number;
  /**
   * The IANA time zone of `cron` (`'Europe/Berlin'`), DST included.
   * @defaultValue `'UTC'`
   */
  tz?: string;
  /** No slot before this time. @defaultValue none */
  startAt?: Date | number;
  /** No slot after this time. @defaultValue none */
  endAt?: Date | number;
  /** Most runs the schedule fires; it ends after them. @defaultValue none */
  limit?: number;
  /** @defaultValue `'allow'` */
  overlap?: ScheduleOverlap;
  /** @defaultValue `'latest'` */
  catchUp?: ScheduleCatchUp;
}

/** `@Task({ schedule })`: the task runs on this schedule, declared by the code (see `docs/schedules.md`). */
export interface TaskScheduleOptions extends ScheduleTiming {
  /**
   * The schedule's id, unique in the backend.
   * @defaultValue the task's name
   */
  id?: string;
  /** The arguments of each run. @defaultValue `[]` */
  args?: readonly unknown[];
}

/** `TaskScheduler.upsert(id, options)`: a schedule made at run time. */
export interface ScheduleUpsert extends ScheduleTiming {
  /** The task's name (registered by this application). */
  task: string;
  /** The arguments of each run. @defaultValue `[]` */
  args?: readonly unknown[];
}

/** A schedule as `TaskScheduler.list()` and `TaskInspector.schedules()` report it. */
export interface ScheduleInfo {
  readonly id: string;
  readonly task: string;
  readonly queue: string;
  /** `'code'`: declared by `@Task({ schedule })`; `'api'`: made by `TaskScheduler.upsert`. */
  readonly source: 'code' | 'api';
  readonly cron: string | null;
  readonly everyMs: number | null;
  readonly tz: string | null;
  readonly args: unknown[];
  readonly overlap: ScheduleOverlap;
  readonly catchUp: ScheduleCatchUp;
  readonly startAt: Date | null;
  readonly endAt: Date | null;
  readonly limit: number | null;
  /** The next slot; null when the schedule has ended, or while its next slot is being planned. */
  readonly nextRunAt: Date | null;
  /** True when no slot is left (past `endAt`, or `limit` runs fired). */
  readonly ended: boolean;
  /** The last slot fired, or null. */
  readonly lastRunAt: Date | null;
  /** The id of the last run fired (a run id of the `TaskQueue`), or null. */
  readonly lastRunId: string | null;
  /** The worker (`host:pid:slot`) that fired the last run, or null. */
  readonly lastFiredBy: string | null;
  /** Runs fired. */
  readonly runs: number;
  /** Slots passed over (catch-up, overlap). */
  readonly skipped: number;
}
