import type { StoredSchedule } from '../backend/schedule-store.js';
import { MAX_CATCH_UP, SCHEDULE_GRACE_MS } from '../records/schedule-options.interface.js';
import type { ScheduleSlots } from './schedule-slots.js';

/** What one fire call does: fire `slot` (or none), move next to `following` (null: none left), pass over `skipped`. */
export interface SlotPlan {
  readonly slot: number | null;
  readonly following: number | null;
  readonly skipped: number;
}

/**
 * What to do with a due schedule at `now` (Redis clock): plan its first slot
 * after a new definition, or fire a due slot as its `catchUp` says. Returns
 * null when nothing is due.
 */
export function planSlot(schedule: StoredSchedule, slots: ScheduleSlots, now: number): SlotPlan | null {
  if (schedule.next === 'end') return null;
  if (schedule.next === '') {
    // A new definition starts after now and after the last slot fired, so a
    // slot that fired under the old one never fires again.
    const after = Math.max(now, schedule.lastSlot ?? -Infinity);
    return { slot: null, following: slots.after(after), skipped: 0 };
  }
  const first = Number(schedule.next);
  if (first > now) return null;
  const { latest, count, recent } = slots.latestBy(first, now, MAX_CATCH_UP);
  const following = slots.after(latest);
  switch (slots.spec.catchUp) {
    case 'all':
      // Oldest first: fire the first kept slot, next is the one after it.
      return {
        slot: recent[0]!,
        following: recent.length > 1 ? recent[1]! : following,
        skipped: count - recent.length,
      };
    case 'latest':
      return { slot: latest, following, skipped: count - 1 };
    case 'none':
      return now - latest <= SCHEDULE_GRACE_MS
        ? { slot: latest, following, skipped: count - 1 }
        : { slot: null, following, skipped: count };
  }
}

/** The id of the run a schedule fires for a slot: one per schedule and slot. */
export function slotRunId(scheduleId: string, slot: number): string {
  return `${scheduleId}@${new Date(slot).toISOString()}`;
}
