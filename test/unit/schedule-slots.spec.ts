import { describe, expect, it } from 'vitest';
import type { StoredSchedule } from '../../libs/threadmill/src/backend/schedule-store.js';
import { planSlot } from '../../libs/threadmill/src/schedule/schedule-plan.js';
import { ScheduleSlots } from '../../libs/threadmill/src/schedule/schedule-slots.js';
import type { ScheduleSpec } from '../../libs/threadmill/src/schedule/schedule-spec.js';

const spec = (overrides: Partial<ScheduleSpec>): ScheduleSpec => ({
  task: 'Reports.build',
  queue: 'default',
  priority: 0,
  leaseTtlMs: 0,
  payload: '{"v":1,"task":"Reports.build","args":[]}',
  cron: null,
  everyMs: null,
  tz: null,
  startAt: null,
  endAt: null,
  limit: null,
  overlap: 'allow',
  catchUp: 'latest',
  ...overrides,
});

/** The first `n` slots after `from`, as ISO times (UTC). */
function slotsAfter(slots: ScheduleSlots, from: string, n: number): string[] {
  const out: string[] = [];
  let at = Date.parse(from);
  for (let i = 0; i < n; i++) {
    at = slots.after(at)!;
    out.push(new Date(at).toISOString());
  }
  return out;
}

const stored = (next: string, lastSlot: number | null = null): StoredSchedule => ({
  id: 'report',
  def: '{}',
  digest: 'd',
  source: 'api',
  next,
  runs: 0,
  skipped: 0,
  lastSlot,
  lastRun: null,
  lastAt: null,
  lastBy: null,
});

describe('schedule slots (croner, time zones and DST)', () => {
  it('a daily 02:30 in Europe/Berlin fires at 03:00 on the spring-forward day, and once on the fall-back day', () => {
    const daily = new ScheduleSlots(spec({ cron: '30 2 * * *', tz: 'Europe/Berlin' }));
    // 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist that day.
    expect(slotsAfter(daily, '2026-03-27T12:00:00Z', 4)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: the first time after the skipped 02:30
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    // 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice, the slot fires at the first.
    expect(slotsAfter(daily, '2026-10-23T12:00:00Z', 3)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST), not the second (CET)
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('an hourly cron fires once per real hour across both changes', () => {
    const hourly = new ScheduleSlots(spec({ cron: '0 * * * *', tz: 'Europe/Berlin' }));
    expect(slotsAfter(hourly, '2026-03-28T23:30:00Z', 3)).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST (02:00 does not exist)
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
    expect(slotsAfter(hourly, '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET: the same wall time, an hour later
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
  });

  it('interval slots are multiples of everyMs from startAt, within startAt and endAt', () => {
    const every = new ScheduleSlots(spec({ everyMs: 1_000, startAt: 10_500, endAt: 13_500 }));
    expect(every.after(0)).toBe(10_500);
    expect(every.after(10_500)).toBe(11_500);
    expect(every.after(11_499)).toBe(11_500);
    expect(every.after(12_500)).toBe(13_500);
    expect(every.after(13_500)).toBeNull();
    expect(new ScheduleSlots(spec({ everyMs: 1_000 })).after(5_400)).toBe(6_000);
  });
});

/** Slots of a one-second interval schedule with the given catch-up. */
const every = (catchUp: ScheduleSpec['catchUp']) => new ScheduleSlots(spec({ everyMs: 1_000, catchUp }));

describe('planning a due schedule', () => {
  it('plans a new definition after now and after the last slot fired', () => {
    expect(planSlot(stored(''), every('latest'), 5_400)).toEqual({ slot: null, following: 6_000, skipped: 0 });
    expect(planSlot(stored('', 9_000), every('latest'), 5_400)).toEqual({ slot: null, following: 10_000, skipped: 0 });
  });

  it('fires a slot due now, and nothing before it is due', () => {
    expect(planSlot(stored('6000'), every('none'), 6_010)).toEqual({ slot: 6_000, following: 7_000, skipped: 0 });
    expect(planSlot(stored('6000'), every('none'), 5_999)).toBeNull();
  });

  it("after an outage: 'latest' fires the latest missed slot, 'none' none older than the grace, 'all' each (at most 100)", () => {
    const now = 500_000; // 495 slots missed since 6 000
    expect(planSlot(stored('6000'), every('latest'), now)).toEqual({ slot: 500_000, following: 501_000, skipped: 494 });
    // 'none': the latest slot is due just now (not missed) and fires; the rest are skipped.
    expect(planSlot(stored('6000'), every('none'), now)).toEqual({ slot: 500_000, following: 501_000, skipped: 494 });
    // An hourly schedule back half an hour after its slot: that slot is missed, none fires.
    const hourly = new ScheduleSlots(spec({ everyMs: 3_600_000, catchUp: 'none' }));
    expect(planSlot(stored('7200000'), hourly, 9_000_000)).toEqual({ slot: null, following: 10_800_000, skipped: 1 });
    expect(planSlot(stored('7200000'), hourly, 7_230_000)).toEqual({
      slot: 7_200_000,
      following: 10_800_000,
      skipped: 0,
    });
    expect(planSlot(stored('6000'), every('all'), now)).toEqual({ slot: 401_000, following: 402_000, skipped: 395 });
    expect(planSlot(stored('499000'), every('all'), now)).toEqual({ slot: 499_000, following: 500_000, skipped: 0 });
  });
});
