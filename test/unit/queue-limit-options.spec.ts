import { describe, expect, it } from 'vitest';
import { ThreadmillConfigError } from '../../libs/threadmill/src/errors/threadmill-config.error.js';
import { validateOptions } from '../../libs/threadmill/src/options/validate-options.js';
import { InvalidRetryAfterError, RetryAfter } from '../../libs/threadmill/src/task/retry-after.js';

describe('the rateLimits option', () => {
  it('defaults to none and keeps valid limits as given', () => {
    expect(validateOptions({}).rateLimits).toEqual({});
    const rateLimits = { emails: { max: 50, perMs: 1_000 }, sms: { max: 1, perMs: 10, startSlackMs: 0 } };
    expect(validateOptions({ rateLimits }).rateLimits).toEqual(rateLimits);
  });

  it('fails the boot naming the queue and the field of a bad limit', () => {
    const bad: [unknown, RegExp][] = [
      [{ emails: { max: 0, perMs: 1_000 } }, /queue "emails".*max must be a positive integer, got 0/],
      [{ emails: { max: 5 } }, /perMs must be a positive integer, got undefined/],
      [{ emails: { max: 5, perMs: 100, startSlackMs: -1 } }, /startSlackMs must be an integer of 0 or more/],
      [{ emails: { max: 5, perMs: 100, burst: 2 } }, /burst is not a rate limit option/],
      [{ 'no spaces': { max: 5, perMs: 100 } }, /the queue name "no spaces"/],
      [[], /rateLimits must be an object/],
    ];
    for (const [rateLimits, message] of bad) {
      expect(() => validateOptions({ rateLimits } as never)).toThrow(ThreadmillConfigError);
      expect(() => validateOptions({ rateLimits } as never)).toThrow(message);
    }
  });
});

describe('context.retryAfter delays', () => {
  it('accepts 0 to a day, rounded to whole ms', () => {
    expect(RetryAfter.of('r1', 0).delayMs).toBe(0);
    expect(RetryAfter.of('r1', 1_500.4).delayMs).toBe(1_500);
    expect(RetryAfter.of('r1', 86_400_000).delayMs).toBe(86_400_000);
  });

  it('refuses anything else with a typed error naming the run', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 86_400_001]) {
      expect(() => RetryAfter.of('r1', bad)).toThrow(InvalidRetryAfterError);
    }
    expect(() => RetryAfter.of('r1', -1)).toThrow(/run r1 needs a delay in ms from 0/);
  });
});

describe('the concurrencyCaps option', () => {
  it('defaults to none and keeps valid caps as given', () => {
    expect(validateOptions({}).concurrencyCaps).toEqual({});
    expect(validateOptions({ concurrencyCaps: { payments: 5, sms: 1 } }).concurrencyCaps).toEqual({
      payments: 5,
      sms: 1,
    });
  });

  it('fails the boot naming the queue of a bad cap and what to pass instead', () => {
    const bad: [unknown, RegExp][] = [
      [{ payments: 0 }, /the cap of queue "payments" must be a positive integer, got 0; leave the queue out/],
      [{ payments: 2.5 }, /queue "payments" must be a positive integer, got 2.5/],
      [{ payments: '5' }, /queue "payments" must be a positive integer, got 5/],
      [{ 'no spaces': 1 }, /concurrencyCaps: the queue name "no spaces"/],
      [[3], /concurrencyCaps must be an object of queue name → cap/],
    ];
    for (const [concurrencyCaps, message] of bad) {
      expect(() => validateOptions({ concurrencyCaps } as never)).toThrow(ThreadmillConfigError);
      expect(() => validateOptions({ concurrencyCaps } as never)).toThrow(message);
    }
  });
});
