import { describe, expect, it } from 'vitest';
import { PrefetchGauge } from '../../libs/threadmill/src/worker/prefetch-gauge.js';

interface Drain {
  /** Runs finished per ms. */
  readonly perMs: number;
  /** Attempts executing at each look (awaiting I/O, say; 0 for synchronous runs). */
  readonly running: number;
  /** The event loop's busy share. */
  readonly loopBusy: number;
  readonly roundTripMs: number;
}

/** A gauge of `concurrency` slots whose event loop is as busy as `share()` says. */
function gauge(floor: number, concurrency: number, share: () => number, adaptive = true): PrefetchGauge {
  return new PrefetchGauge(floor, 1_000, adaptive, concurrency, share, 0);
}

/** Feeds `g` a drain from `from` to `to` ms (completions counted from `base`), looking every 10 ms; its prefetch then. */
function drain(g: PrefetchGauge, d: Drain, from: number, to: number, base = 0): number {
  let prefetch = 0;
  for (let t = from; t <= to; t += 10) {
    g.claimReturned(d.roundTripMs);
    prefetch = g.prefetch(base + Math.round(d.perMs * (t - from)), d.running, t);
  }
  return prefetch;
}

/** A drain and the loop share it reports, for one gauge. */
function drained(floor: number, concurrency: number, d: Drain): number {
  return drain(
    gauge(floor, concurrency, () => d.loopBusy),
    d,
    0,
    2_000,
  );
}

describe('PrefetchGauge', () => {
  it('keeps a given prefetch whatever the drain', () => {
    const g = gauge(5, 100, () => 0.5, false);
    expect(drain(g, { perMs: 50, running: 0, loopBusy: 0.5, roundTripMs: 3 }, 0, 1_000)).toBe(5);
  });

  it('stays at its floor while runs finish slowly, however idle the loop', () => {
    // 10 slots of 100 ms runs awaiting I/O: 0.1 runs per ms, the loop nearly idle.
    expect(drained(2, 10, { perMs: 0.1, running: 10, loopBusy: 0.02, roundTripMs: 1 })).toBe(2);
  });

  it('covers a few claim round trips of what an idling loop could run, up to its cap', () => {
    // Synchronous runs at 20 per ms in a loop busy half the time: it could run 40 per ms; 40 × 2 × 4 = 320.
    const half = drained(2, 100, { perMs: 20, running: 0, loopBusy: 0.5, roundTripMs: 2 });
    expect(half).toBeGreaterThanOrEqual(310);
    expect(half).toBeLessThanOrEqual(330);
    expect(drained(2, 100, { perMs: 100, running: 0, loopBusy: 0.5, roundTripMs: 5 })).toBe(1_000);
  });

  it('does not grow for a loop saturated by synchronous work', () => {
    // One run per ms of CPU each: the loop is busy all the time, and more runs held would only wait.
    expect(drained(2, 100, { perMs: 1, running: 0, loopBusy: 1, roundTripMs: 1 })).toBe(4);
  });

  it('plans runs that await I/O by what their slots finish, not by the idle loop', () => {
    // 100 slots of 3 ms I/O: 33 runs per ms at most, whatever the loop's idle time; 33.3 × 3 × 4 = 400.
    const prefetch = drained(2, 100, { perMs: 100 / 3, running: 100, loopBusy: 0.2, roundTripMs: 3 });
    expect(prefetch).toBeGreaterThanOrEqual(390);
    expect(prefetch).toBeLessThanOrEqual(410);
  });

  it('shrinks to its floor at the first sample after the runs turned slow', () => {
    const g = gauge(2, 10, () => 0.5);
    // 50 runs per ms in a half-busy loop: 100 × 2 × 4.
    expect(drain(g, { perMs: 50, running: 0, loopBusy: 0.5, roundTripMs: 2 }, 0, 1_000)).toBe(800);
    // The same slots now busy with 100 ms runs: 0.1 per ms.
    let prefetch = 0;
    for (let t = 1_010; t <= 1_060; t += 10) prefetch = g.prefetch(50_000 + Math.round(0.1 * (t - 1_000)), 10, t);
    expect(prefetch).toBe(2);
  });

  it('holds no more payload than its budget', () => {
    const g = gauge(2, 100, () => 0.5);
    // Runs of a million characters each: 32 MiB holds 33 of them.
    g.claimed(10, 10 * 1_000_000);
    expect(drain(g, { perMs: 100, running: 0, loopBusy: 0.5, roundTripMs: 5 }, 0, 1_000)).toBe(33);
  });

  it('keeps what it learnt across an idle span', () => {
    const g = gauge(2, 100, () => 0.5);
    const fast = { perMs: 20, running: 0, loopBusy: 0.5, roundTripMs: 2 };
    const before = drain(g, fast, 0, 1_000);
    // Nothing runs for a second: no completions, no busy slots.
    const idle = drain(g, { ...fast, perMs: 0 }, 1_010, 2_000, 20_000);
    expect(idle).toBe(before);
  });
});
