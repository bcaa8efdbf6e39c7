import { describe, expect, it } from 'vitest';
import { newRunId } from '../../libs/threadmill/src/codec/run-id.js';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const DIGITS = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The ms a ULID's first 10 digits encode. */
function timeOf(id: string): number {
  let ms = 0;
  for (const digit of id.slice(0, 10)) ms = ms * 32 + DIGITS.indexOf(digit);
  return ms;
}

describe('run ids', () => {
  it('are ULIDs whose first 10 digits are the time they were made, in ms', () => {
    const before = Date.now();
    const id = newRunId();
    const after = Date.now();
    expect(id).toMatch(ULID);
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(after);
  });

  it('sort as the times they were made', async () => {
    const first = newRunId();
    await new Promise((resolve) => setTimeout(resolve, 3));
    const second = newRunId();
    expect(timeOf(second)).toBeGreaterThan(timeOf(first));
    expect([second, first].sort()).toEqual([first, second]);
  });

  it('are distinct strings that later ids do not change, across refills of the random pool', () => {
    // The text is written into one reused buffer and the random bytes come
    // from a pool of 512 ids: 100,000 ids cross many refills.
    const first = newRunId();
    const copy = `${first}`;
    const ids = Array.from({ length: 100_000 }, () => newRunId());
    expect(first).toBe(copy);
    expect(new Set([first, ...ids]).size).toBe(100_001);
    expect(ids.every((id) => ULID.test(id))).toBe(true);
    // Every digit turns up in every random position.
    for (const at of [10, 11, 17, 24, 25]) {
      expect(new Set(ids.map((id) => id[at])).size).toBe(32);
    }
  });
});
