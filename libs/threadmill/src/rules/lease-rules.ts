import type { RenewedLease } from '../records/backend-records.js';
import { TaskStatus } from '../records/task-status.enum.js';

/**
 * The rules of a lease, as plain functions: the executable specification
 * of the lease part of the run state machine. The scripts implement each
 * rule once in Lua (the file named at each); here is its one TypeScript
 * form, which the in-memory backend runs and the model-based test's model
 * applies, so that the conformance suites and the model hold the scripts to
 * one statement of it (docs/architecture.md, "Where a change goes").
 */

/**
 * A lease's started flag, as the leases hash stores it (`lua/includes/lease.lua`):
 * 0 only held (prefetched, or not started yet), 1 its attempt started (an
 * expiry charges it), 2 the reaper's claim of a started attempt whose expiry
 * was counted, 3 a suspect announced it is about to start (an expiry counts
 * a recovery, not an attempt).
 */
export type StartFlag = 0 | 1 | 2 | 3;

/** A lease holds until its deadline and no longer, whether or not the reaper has claimed it (`leaseHolds`). */
export function leaseHolds(deadline: number, now: number): boolean {
  return deadline >= now;
}

/** A start mark under a lease that holds (acknowledge.lua): a held or announced attempt is started. */
export function startMarked(flag: StartFlag): StartFlag {
  return flag === 0 || flag === 3 ? 1 : flag;
}

/** `announceStart` under a lease that holds (start.lua): only a held attempt becomes announced. */
export function startAnnounced(flag: StartFlag): StartFlag {
  return flag === 0 ? 3 : flag;
}

/** Whether the attempt's start was recorded, so that ending the lease otherwise (cancel.lua) charges it. */
export function startRecorded(flag: StartFlag): boolean {
  return flag === 1 || flag === 2;
}

/**
 * Whether a hand-back (release.lua) may return the run to READY uncharged:
 * only while its attempt's start is unrecorded (held, or announced by a
 * suspect that then did not start). A started attempt is charged; its
 * holder acknowledges it instead.
 */
export function mayHandBack(flag: StartFlag): boolean {
  return !startRecorded(flag);
}

/** What the reaper does with a run whose lease expired (reap.lua). */
export interface Expiry {
  /** Lease expiries in a row after this one: the run's `recoveries`. */
  readonly recoveries: number;
  /** Back to READY at its place, uncharged; otherwise claimed for the broker, which settles the attempt. */
  readonly handBack: boolean;
}

/**
 * The expiry of a lease with started flag `flag`, on a run with `recoveries`
 * expiries in a row before it. A held attempt goes back uncharged, its first
 * such expiry making the run a suspect (1 recovery; its holder may have died
 * starting it). A started or announced attempt's expiry counts one recovery
 * (a broker's claim, 2, was counted when it was reaped). An announced attempt
 * goes back uncharged too, until its recoveries reach `maxRecoveries`; a
 * started one, or an announced one there, is settled by the broker.
 */
export function expiryOf(flag: StartFlag, recoveries: number, maxRecoveries: number): Expiry {
  if (flag === 0) return { recoveries: Math.max(recoveries, 1), handBack: true };
  const counted = flag === 2 ? recoveries : recoveries + 1;
  return { recoveries: counted, handBack: flag === 3 && counted < maxRecoveries };
}

/** Whether the broker quarantines a reaped run rather than ask its retry policy: it expired `maxRecoveries` times in a row. */
export function quarantinedOnReap(recoveries: number, maxRecoveries: number): boolean {
  return recoveries >= maxRecoveries;
}

/** A worker's outcome ends a run's series of lease expiries; the broker's outcome for a reaped run does not. */
export function recoveriesAfterOutcome(source: 'worker' | 'reaper', recoveries: number): number {
  return source === 'worker' ? 0 : recoveries;
}

/**
 * A renewal's answer (renew.lua): a lease that holds moves its deadline and
 * is `held`, or `paused` when its queue is paused (the holder finishes, then
 * takes no more); one that does not is `cancelled` when its run reads
 * CANCELLED (renew.lua reads the status, not the token), else `lost`.
 */
export function renewalAnswer(holds: boolean, queuePaused: boolean, status: string | undefined): RenewedLease {
  if (!holds) return status === TaskStatus.CANCELLED ? 'cancelled' : 'lost';
  return queuePaused ? 'paused' : 'held';
}
