import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CancelledError } from '../../libs/threadmill/src/errors/cancelled.error.js';
import { LeaseLostError } from '../../libs/threadmill/src/errors/lease-lost.error.js';
import type { LeasedRun } from '../../libs/threadmill/src/backend/task-backend.js';
import { Lease } from '../../libs/threadmill/src/worker/lease-keeper.js';
import { StaleAcknowledgementSummary } from '../../libs/threadmill/src/worker/stale-acknowledgement-summary.js';
import { CapturedLogger } from '../support/captured-logger.js';

describe('the summary of stale acknowledgements', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('says a minute of discards in one line, at LOG when every lease was revoked', () => {
    const logger = new CapturedLogger();
    const summary = new StaleAcknowledgementSummary(undefined, logger);
    for (let i = 0; i < 35; i++) summary.count('revoked', 1);
    vi.advanceTimersByTime(59_999);
    expect(logger.lines).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(logger.lines).toEqual([
      {
        level: 'log',
        message:
          'Discarded 35 stale acknowledgement(s) in the last minute: 35 of runs cancelled or purged while they ran ' +
          '(threadmill_stale_acks_total by reason)',
      },
    ]);
  });

  it('warns when leases expired among them', () => {
    const logger = new CapturedLogger();
    const summary = new StaleAcknowledgementSummary(60_000, logger);
    summary.count('revoked', 35);
    summary.count('expired', 2);
    vi.advanceTimersByTime(60_000);
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]!.level).toBe('warn');
    expect(logger.lines[0]!.message).toMatch(
      /^Discarded 37 stale acknowledgement\(s\) in the last minute: 35 of runs cancelled or purged while they ran, 2 after their lease expired \(threadmill_stale_acks_total by reason\)\. A lease expires when/,
    );
  });

  it('logs at most one line per interval, and nothing for a quiet one', () => {
    const logger = new CapturedLogger();
    const summary = new StaleAcknowledgementSummary(1_000, logger);
    summary.count('revoked', 1);
    vi.advanceTimersByTime(1_000);
    summary.count('revoked', 2);
    vi.advanceTimersByTime(999);
    expect(logger.lines).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(
      logger.lines.map((line) => /^Discarded (\d+) .* in the last ([\d.]+ s):/.exec(line.message)?.slice(1)),
    ).toEqual([
      ['1', '1.0 s'],
      ['2', '1.0 s'],
    ]);
    vi.advanceTimersByTime(10_000);
    expect(logger.lines).toHaveLength(2);
  });

  it('tells what is left at once when flushed (a worker that stops), and only once', () => {
    const logger = new CapturedLogger();
    const summary = new StaleAcknowledgementSummary(60_000, logger);
    summary.count('expired', 1);
    vi.advanceTimersByTime(12_000);
    summary.flush();
    summary.flush();
    vi.advanceTimersByTime(60_000);
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]!.level).toBe('warn');
    expect(logger.lines[0]!.message).toMatch(
      /^Discarded 1 stale acknowledgement\(s\) in the last 12 s: 1 after their lease expired \(/,
    );
  });
});

describe('why an acknowledgement under a lease was stale', () => {
  const run = { id: 'r1', queue: 'default', token: 't1' } as LeasedRun;

  it('revoked: a renewal found the run cancelled', () => {
    const lease = new Lease(run, 1_000, performance.now() - 1);
    lease.abort(new CancelledError('r1'));
    expect(lease.staleReason).toBe('revoked');
  });

  it('revoked: the lease still held by this process clock (cancelled or purged since the last renewal)', () => {
    expect(new Lease(run, 1_000, performance.now() + 1_000).staleReason).toBe('revoked');
  });

  it('expired: past this process clock, or found lost by a renewal', () => {
    expect(new Lease(run, 1_000, performance.now() - 1).staleReason).toBe('expired');
    const lost = new Lease(run, 1_000, performance.now() + 1_000);
    lost.abort(new LeaseLostError('r1'));
    expect(lost.staleReason).toBe('expired');
  });
});
