import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { InvalidScheduleError } from '../errors/invalid-schedule.error.js';
import type { ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { buildRun } from '../queue/build-run.js';
import type { EnqueueTarget } from '../queue/enqueue-target.js';
import {
  MIN_EVERY_MS,
  type ScheduleCatchUp,
  type ScheduleOverlap,
  type ScheduleTiming,
} from '../records/schedule-options.interface.js';

/** A schedule id: what a key and a run id can carry and a reader can tell apart. */
export const SCHEDULE_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * A schedule's stored definition: everything a process needs to plan its
 * slots and store its runs, whatever code it runs (the payload is encoded
 * once, when the schedule is made). Its JSON is hashed into the digest that
 * versions the schedule.
 */
export interface ScheduleSpec {
  readonly task: string;
  readonly queue: string;
  readonly priority: number;
  /** Lease override in ms, or 0. */
  readonly leaseTtlMs: number;
  readonly payload: string;
  readonly cron: string | null;
  readonly everyMs: number | null;
  readonly tz: string | null;
  readonly startAt: number | null;
  readonly endAt: number | null;
  readonly limit: number | null;
  readonly overlap: ScheduleOverlap;
  readonly catchUp: ScheduleCatchUp;
}

/** A definition ready to store: its JSON and digest. */
export interface EncodedSpec {
  readonly spec: ScheduleSpec;
  readonly def: string;
  readonly digest: string;
}

const describe = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** An epoch ms from a Date or a number, or null; throws `problem` when it is neither. */
function instant(value: Date | number | undefined, fail: (problem: string) => Error, name: string): number | null {
  if (value === undefined || value === null) return null;
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw fail(`${name} must be a valid Date or epoch ms, got ${describe(value)}.`);
  }
  return ms;
}

/**
 * Checks a schedule's timing and its task's arguments, and encodes the
 * definition to store.
 * @throws InvalidScheduleError naming the schedule and what to fix
 */
export function encodeSpec(
  id: string,
  timing: ScheduleTiming,
  args: readonly unknown[] | undefined,
  target: EnqueueTarget,
  options: Pick<ThreadmillOptions, 'queues' | 'maxPayloadBytes'>,
): EncodedSpec {
  const fail = (problem: string) => new InvalidScheduleError(id, problem);
  if (typeof id !== 'string' || !SCHEDULE_ID_PATTERN.test(id)) {
    throw fail('the id must be 1-100 characters of letters, digits, and _ . : -');
  }
  const { cron, everyMs, tz, limit, overlap = 'allow', catchUp = 'latest' } = timing;
  if ((cron === undefined) === (everyMs === undefined)) {
    throw fail('give either cron or everyMs, not both' + (cron === undefined ? ' (neither was given).' : '.'));
  }
  if (everyMs !== undefined && (typeof everyMs !== 'number' || !Number.isInteger(everyMs) || everyMs < MIN_EVERY_MS)) {
    throw fail(`everyMs must be an integer of at least ${MIN_EVERY_MS}, got ${describe(everyMs)}.`);
  }
  if (tz !== undefined && (typeof tz !== 'string' || !validTimeZone(tz))) {
    throw fail(`tz ${describe(tz)} is not an IANA time zone (such as 'Europe/Berlin' or 'UTC').`);
  }
  if (tz !== undefined && cron === undefined) throw fail('tz applies to cron only; remove it or use cron.');
  if (cron !== undefined) {
    if (typeof cron !== 'string') throw fail(`cron must be a string, got ${describe(cron)}.`);
    let next: Date | null;
    try {
      next = new Cron(cron, { timezone: tz ?? 'UTC', paused: true }).nextRun();
    } catch (error) {
      throw fail(`cron ${describe(cron)} is not a valid cron expression: ${(error as Error).message}`);
    }
    if (next === null) throw fail(`cron ${describe(cron)} never fires (no such date); fix the expression.`);
  }
  const startAt = instant(timing.startAt, fail, 'startAt');
  const endAt = instant(timing.endAt, fail, 'endAt');
  if (startAt !== null && endAt !== null && endAt < startAt) throw fail('endAt is before startAt.');
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)) {
    throw fail(`limit must be a positive integer, got ${describe(limit)}.`);
  }
  if (overlap !== 'allow' && overlap !== 'skip') {
    throw fail(`overlap must be 'allow' or 'skip', got ${describe(overlap)}.`);
  }
  if (catchUp !== 'none' && catchUp !== 'latest' && catchUp !== 'all') {
    throw fail(`catchUp must be 'none', 'latest' or 'all', got ${describe(catchUp)}.`);
  }
  let run;
  try {
    run = buildRun(target, { task: target.name, args: [...(args ?? [])] }, undefined, options);
  } catch (error) {
    if (error instanceof InvalidEnqueueError) throw fail(error.message);
    throw error;
  }
  const spec: ScheduleSpec = {
    task: target.name,
    queue: run.queue,
    priority: run.priority,
    leaseTtlMs: run.leaseTtlMs,
    payload: run.payload,
    cron: cron ?? null,
    everyMs: everyMs ?? null,
    tz: cron !== undefined ? (tz ?? 'UTC') : null,
    startAt,
    endAt,
    limit: limit ?? null,
    overlap,
    catchUp,
  };
  const def = JSON.stringify(spec);
  return { spec, def, digest: createHash('sha256').update(def).digest('hex').slice(0, 32) };
}

function validTimeZone(tz: string): boolean {
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone !== '';
  } catch {
    return false;
  }
}
