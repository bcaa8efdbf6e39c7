import { describe, expect, it } from 'vitest';
import { CLOCK_SKEW_WARNING_MS, RedisClock } from '../../libs/threadmill/src/backend/redis/redis-clock.js';

/** A clock fed with replies of a Redis whose epoch ms are `redisAt(local)` at monotonic time `local`. */
function clockOf(warnings: string[] = []): RedisClock {
  return new RedisClock('127.0.0.1:6379', (message) => warnings.push(message));
}

describe('RedisClock', () => {
  it('bounds the start of a claimed run by the round trip of the claim, whatever the wall clock says', () => {
    const clock = clockOf();
    // Redis's clock reads 1,000,000 + t at monotonic t; the claim was sent at 100, answered at 130, stamped at 115.
    clock.observe(1_000_115, 100, 130);
    // A slack of 100 ms from the claim's Redis time: the run must start by 100 + 100 at the latest (sent + slack),
    // never later than Redis's clock allows, and not sooner than the worst case of the round trip.
    const by = clock.startBy(1_000_115, 100, 130);
    expect(by).toBeGreaterThanOrEqual(199);
    expect(by).toBeLessThanOrEqual(215);
  });

  it('narrows the bounds with every reply, so a slow reply does not cost the slack of a fast one', () => {
    const clock = clockOf();
    clock.observe(1_000_050, 0, 100); // a slow one: offset within [999,950, 1,000,051]
    clock.observe(1_000_201, 200, 202); // a fast one: offset within [999,999, 1,000,002]
    const by = clock.startBy(1_000_300, 100, 202);
    // The run's claim was stamped 1,000,300, i.e. at monotonic 300 (± the fast reply's 2 ms): by about 400.
    expect(by).toBeGreaterThan(396);
    expect(by).toBeLessThanOrEqual(401);
    expect(Math.abs(clock.now() - (1_000_000 + performance.now()))).toBeLessThan(3);
  });

  it('starts anew when a reply contradicts the bounds (a clock was stepped)', () => {
    const clock = clockOf();
    clock.observe(1_000_010, 10, 12);
    // Redis's clock stepped back 5 s.
    clock.observe(995_020, 20, 22);
    const by = clock.startBy(995_020, 100, 22);
    expect(by).toBeGreaterThanOrEqual(118);
    expect(by).toBeLessThanOrEqual(121);
  });

  it('widens old bounds with drift, so that a bound stays a bound', () => {
    const clock = clockOf();
    clock.observe(1_000_010, 10, 10);
    // An hour later on the monotonic clock, with no reply meanwhile: the start bound errs early by the drift.
    const hour = 3_600_000;
    const by = clock.startBy(1_000_000 + hour, 100, hour);
    expect(by).toBeLessThan(hour + 100);
    expect(by).toBeGreaterThan(hour + 100 - 0.002 * hour);
  });

  it("warns once when this host's wall clock is off Redis's, and again only after it came back", () => {
    const warnings: string[] = [];
    const clock = clockOf(warnings);
    const reply = (offsetMs: number) => {
      const local = performance.now();
      clock.observe(Date.now() - offsetMs, local, local);
    };
    reply(0);
    expect(clock.offsetMs()).toBeGreaterThanOrEqual(-2);
    expect(clock.offsetMs()).toBeLessThanOrEqual(2);
    expect(warnings).toEqual([]);
    reply(CLOCK_SKEW_WARNING_MS + 150);
    reply(CLOCK_SKEW_WARNING_MS + 150);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/runs 6\d\d ms ahead of the clock of Redis at 127\.0\.0\.1:6379/);
    expect(warnings[0]).toMatch(/NTP/);
    reply(0);
    reply(-5_000);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/behind/);
    expect(clock.offsetMs()).toBeGreaterThan(-5_003);
  });
});
