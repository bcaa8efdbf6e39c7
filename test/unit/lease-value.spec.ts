import { describe, expect, it } from 'vitest';
import { parseLeaseValue, withLease } from '../../libs/threadmill/src/backend/redis/lease-value.js';

describe('lease values (the leases hash entry overlaid on a run)', () => {
  it('parses token, claim time, attempt, recoveries, the start flag and a worker id that holds a "|"', () => {
    expect(parseLeaseValue('aB3_x.42|1700000000000|3|1|1|"host|a:7:0"')).toEqual({
      token: 'aB3_x.42',
      claimedAt: 1_700_000_000_000,
      attempt: 3,
      recoveries: 1,
      started: true,
      worker: '"host|a:7:0"',
    });
    expect(parseLeaseValue('aB3_x.43|1700000000000|1|0|0|"h:1:0"').started).toBe(false);
  });

  it('reads a first attempt as RUNNING, attempt 1, by its holder, started at the claim', () => {
    const stored = { payload: '{}', queue: 'q', enqueuedAt: '1' };
    expect(withLease(stored, 's.7|1000|1|0|0|"h:1:0"')).toEqual({
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
    expect(withLease(stored, 's.8|2000|2|0|1|"h:2:0"')).toMatchObject({
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
