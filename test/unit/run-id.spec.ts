import { describe, expect, it } from 'vitest';
import { newRunId } from '../../libs/threadmill/src/codec/run-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('run ids', () => {
  it('are UUIDv7s whose first 48 bits are the time they were made, in ms', () => {
    const before = Date.now();
    const id = newRunId();
    const after = Date.now();
    expect(id).toMatch(UUID_V7);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('are distinct strings that later ids do not change, across refills of the random pool', () => {
    // The text is written into one reused buffer and the random bytes come
    // from a pool of 512 ids: 100,000 ids cross many refills.
    const first = newRunId();
    const copy = `${first}`;
    const ids = Array.from({ length: 100_000 }, () => newRunId());
    expect(first).toBe(copy);
    expect(new Set([first, ...ids]).size).toBe(100_001);
    expect(ids.every((id) => UUID_V7.test(id))).toBe(true);
    // Every hex digit of the random part turns up in every random position.
    for (const at of [16, 17, 20, 25, 35]) {
      expect(new Set(ids.map((id) => id[at])).size).toBe(16);
    }
  });
});
