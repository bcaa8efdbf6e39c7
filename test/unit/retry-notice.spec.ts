import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RetryNotice } from '../../libs/threadmill/src/worker/retry-notice.js';

describe('RetryNotice', () => {
  const lines: { level: string; text: string }[] = [];
  const logger = {
    log: (text: string) => void lines.push({ level: 'log', text }),
    warn: (text: string) => void lines.push({ level: 'warn', text }),
  };
  beforeEach(() => {
    lines.length = 0;
    vi.useFakeTimers({ now: Date.parse('2026-12-07T10:00:00Z') });
  });
  afterEach(() => void vi.useRealTimers());

  it('warns at the first failure, not at each retry, and says once when the step succeeds again', () => {
    const notice = new RetryNotice('Lease renewal', logger);
    notice.succeeded();
    expect(lines).toEqual([]);
    notice.failed(new Error('Connection is closed.'), 'at the next renewal');
    for (let i = 0; i < 30; i++) {
      vi.advanceTimersByTime(1_000);
      notice.failed(new Error('Connection is closed.'), 'at the next renewal');
    }
    vi.advanceTimersByTime(500);
    notice.succeeded();
    notice.succeeded();
    expect(lines).toEqual([
      { level: 'warn', text: 'Lease renewal failed, retrying at the next renewal: Connection is closed.' },
      { level: 'log', text: 'Lease renewal succeeded again, after 31 failed attempt(s) over 30.5 s.' },
    ]);
  });

  it('says a step that keeps failing again every minute, with how long it has failed', () => {
    const notice = new RetryNotice('Broker pass', logger);
    for (let i = 0; i <= 130; i++) {
      notice.failed(new Error('ERR script error'), 'in 2000 ms');
      vi.advanceTimersByTime(1_000);
    }
    expect(lines.map(({ text }) => text)).toEqual([
      'Broker pass failed, retrying in 2000 ms: ERR script error',
      'Broker pass failed, retrying in 2000 ms: ERR script error (61 attempts have failed since 2026-12-07T10:00:00.000Z)',
      'Broker pass failed, retrying in 2000 ms: ERR script error (121 attempts have failed since 2026-12-07T10:00:00.000Z)',
    ]);
  });
});
