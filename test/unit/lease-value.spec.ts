import { describe, expect, it } from 'vitest';
import { parseLeaseValue, withLease } from '../../libs/threadmill/src/backend/redis/lease-value.js';

describe('lease values (the leases hash entry overlaid on a run)', () => {
  it('parses token, claim time, attempt, recoveries and a worker id that holds a "|"', () => {
    expect(parseLeaseValue('42|1700000000000|3|1|"host|a:7:0"')).toEqual({
      token: '42',
      claimedAt: 1_700_000_000_000,
      attempt: 3,
      recoveries: 1,
      worker: '"host|a:7:0"',
    });
  });

  it('reads a first attempt as RUNNING, attempt 1, by its holder, started at the claim', () => {
    const stored = { payload: '{}', queue: 'q', enqueuedAt: '1' };
    expect(withLease(stored, '7|1000|1|0|"h:1:0"')).toEqual({
      ...stored,
      status: 'RUNNING',
      attempts: '1',
      workers: '"h:1:0"',
      lastAttemptedAt: '1000',
      startedAt: '1000',
    });
  });

  it('appends the holder to the settled attempts of a retried run and keeps its first start', () => {
    const stored = { status: 'READY', attempts: '1', workers: '"h:1:0"', startedAt: '900', errors: '{"m":1}' };
    expect(withLease(stored, '8|2000|2|0|"h:2:0"')).toMatchObject({
      status: 'RUNNING',
      attempts: '2',
      workers: '"h:1:0","h:2:0"',
      lastAttemptedAt: '2000',
      startedAt: '900',
      errors: '{"m":1}',
    });
  });

  it('leaves a run without a lease as stored', () => {
    const stored = { status: 'FAILED', attempts: '2' };
    expect(withLease(stored, null)).toBe(stored);
  });
});
