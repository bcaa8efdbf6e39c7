import { describe, expect, it } from 'vitest';
import { InvalidEnqueueError } from '../../libs/threadmill/src/errors/invalid-enqueue.error.js';
import { InvalidTaskError } from '../../libs/threadmill/src/errors/invalid-task.error.js';
import { limitGroup, storedTaskLimit } from '../../libs/threadmill/src/limits/task-limit.js';
import { resolveTaskSettings } from '../../libs/threadmill/src/task/task-settings.js';
import { formatTaskLimit, parseTaskLimit } from '../../libs/threadmill/src/backend/redis/task-limit-value.js';

const settle = (limit: unknown, name = 'Billing.invoice') =>
  resolveTaskSettings({ name, limit }, 'Billing#invoice', '@Task()', ['default']);

/** A limit key: the first argument, whatever it is (a bad one is refused at enqueue). */
const customerKey = ([customer]: readonly unknown[]) => customer as string;
const throwing = (): string => {
  throw new Error('no customer');
};

describe('@Task({ limit })', () => {
  it('keeps a valid limit, its key function included', () => {
    const limit = { rate: { max: 10, perMs: 1_000 }, concurrency: 2, key: customerKey };
    expect(settle(limit).limit).toBe(limit);
    expect(settle(undefined).limit).toBeUndefined();
  });

  it('fails the boot naming the site and what is wrong with a bad limit', () => {
    const bad: [unknown, RegExp][] = [
      [{}, /give a rate, a concurrency or both/],
      [{ concurrency: 0 }, /concurrency must be a positive integer, got 0/],
      [{ rate: { max: 5 } }, /rate\.perMs must be a positive integer, got undefined/],
      [{ rate: 5 }, /rate must be \{ max, perMs, startSlackMs\? \}, got 5/],
      [{ concurrency: 1, key: 'customer' }, /key must be a function/],
      [{ concurrency: 1, perKey: true }, /perKey is not a limit option/],
      [7, /limit must be \{ rate\?, concurrency\?, key\? \}/],
    ];
    for (const [limit, message] of bad) {
      expect(() => settle(limit)).toThrow(InvalidTaskError);
      expect(() => settle(limit)).toThrow(message);
      expect(() => settle(limit)).toThrow(/Billing#invoice/);
    }
    expect(() => settle({ concurrency: 1 }, 'a\nb')).toThrow(/must not hold a newline/);
  });

  it("names a run's group by its task and the key of its arguments, refusing a bad key with a typed error", () => {
    const key = customerKey;
    expect(limitGroup('Billing.invoice', { concurrency: 1 }, ['c1'], 'Billing.invoice')).toBe('Billing.invoice');
    expect(limitGroup('Billing.invoice', { concurrency: 1, key }, ['c1'], 'Billing.invoice')).toBe(
      'Billing.invoice\nc1',
    );
    for (const customer of ['', 'x'.repeat(201), 42, undefined]) {
      expect(() => limitGroup('Billing.invoice', { concurrency: 1, key }, [customer], 'Billing.invoice')).toThrow(
        InvalidEnqueueError,
      );
    }
    expect(() => limitGroup('Billing.invoice', { concurrency: 1, key: throwing }, [], 'Billing.invoice')).toThrow(
      /Billing\.invoice.*limit key function threw: no customer/,
    );
  });

  it('stores a limit with its rate slack defaulted and reads it back', () => {
    const stored = storedTaskLimit({ rate: { max: 10, perMs: 1_000 }, concurrency: 2 });
    expect(stored).toEqual({ rate: { max: 10, perMs: 1_000, startSlackMs: 100 }, concurrency: 2 });
    expect(formatTaskLimit(stored)).toBe('10|1000|100|2');
    expect(parseTaskLimit(formatTaskLimit(stored))).toEqual(stored);
    expect(parseTaskLimit(formatTaskLimit({ concurrency: 3 }))).toEqual({ concurrency: 3 });
    expect(parseTaskLimit('garbage')).toBeNull();
  });
});
