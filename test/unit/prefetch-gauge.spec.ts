import { describe, expect, it } from 'vitest';
import { PrefetchGauge } from '../../libs/threadmill/src/worker/prefetch-gauge.js';

/** Feeds `gauge` completions at `perMs` runs per ms for `ms`, claims returning after `roundTripMs`; its prefetch then. */
function drain(gauge: PrefetchGauge, perMs: number, ms: number, roundTripMs: number): number {
  let prefetch = 0;
  for (let t = 0; t <= ms; t += 10) {
    gauge.claimReturned(roundTripMs);
    prefetch = gauge.prefetch(Math.round(perMs * t), t);
  }
  return prefetch;
}

describe('PrefetchGauge', () => {
  it('keeps a given prefetch whatever the drain', () => {
    const gauge = new PrefetchGauge(5, 400, false);
    expect(drain(gauge, 50, 1_000, 3)).toBe(5);
  });

  it('stays at its floor while runs finish slowly', () => {
    // 10 slots of 100 ms runs: 0.1 runs per ms.
    expect(drain(new PrefetchGauge(2, 40, true), 0.1, 2_000, 1)).toBe(2);
  });

  it('covers a few claim round trips of a fast drain, up to its cap', () => {
    // 20 runs per ms and claims of 2 ms: 20 × 2 × 4 = 160.
    expect(drain(new PrefetchGauge(2, 400, true), 20, 2_000, 2)).toBeGreaterThanOrEqual(150);
    expect(drain(new PrefetchGauge(2, 400, true), 20, 2_000, 2)).toBeLessThanOrEqual(170);
    expect(drain(new PrefetchGauge(2, 400, true), 100, 2_000, 5)).toBe(400);
  });

  it('shrinks back to its floor once the drain slows', () => {
    const gauge = new PrefetchGauge(2, 400, true);
    drain(gauge, 50, 1_000, 2);
    let prefetch = 0;
    // The same gauge, runs now finishing at 0.05 per ms.
    for (let t = 1_010; t <= 3_000; t += 10) prefetch = gauge.prefetch(50_000 + Math.round(0.05 * (t - 1_000)), t);
    expect(prefetch).toBe(2);
  });
});
