import { ExponentialBackoff, type RetryContext } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';
import { retryDelay } from '../../libs/threadmill/src/retry/retry-policy.js';

const context = (attempt: number, error: Error = new Error('x')): RetryContext =>
  ({ attempt, error, result: {} }) as unknown as RetryContext;

class Transient extends Error {}

describe('ExponentialBackoff', () => {
  it('grows by factor from baseDelayMs and stops after maxRetries', () => {
    const policy = new ExponentialBackoff({ baseDelayMs: 100, factor: 3, maxRetries: 3 });
    expect([1, 2, 3, 4].map((attempt) => policy.delayFor(context(attempt)))).toEqual([100, 300, 900, null]);
  });

  it('caps each delay at maxDelayMs', () => {
    const policy = new ExponentialBackoff({ baseDelayMs: 1_000, maxDelayMs: 5_000, maxRetries: 10 });
    expect(policy.delayFor(context(8))).toBe(5_000);
  });

  it('has documented defaults: 1 s base, factor 2, 5 retries, 1 h cap', () => {
    const policy = new ExponentialBackoff();
    expect([1, 2, 5, 6].map((attempt) => policy.delayFor(context(attempt)))).toEqual([1_000, 2_000, 16_000, null]);
    expect(policy.maxDelayMs).toBe(3_600_000);
  });

  it('retries only the error classes of retryOn', () => {
    const policy = new ExponentialBackoff({ retryOn: [Transient] });
    expect(policy.delayFor(context(1, new Transient()))).toBe(1_000);
    expect(policy.delayFor(context(1, new TypeError()))).toBeNull();
  });

  it('spreads delays within ±jitter', () => {
    const policy = new ExponentialBackoff({ baseDelayMs: 1_000, jitter: 0.5 });
    const delays = Array.from({ length: 200 }, () => policy.delayFor(context(1))!);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...delays)).toBeLessThanOrEqual(1_500);
    expect(new Set(delays).size).toBeGreaterThan(50);
  });

  it('refuses impossible options with one message naming them', () => {
    expect(() => new ExponentialBackoff({ factor: 0.5, maxRetries: -1 })).toThrow(
      /Invalid ExponentialBackoff options: factor=0\.5, maxRetries=-1/,
    );
  });
});

describe('retryDelay', () => {
  it('accepts function policies and rounds their delay', () => {
    expect(retryDelay(({ attempt }) => attempt * 10.4, context(2))).toBe(21);
    expect(retryDelay(() => null, context(1))).toBeNull();
    expect(retryDelay(undefined, context(1))).toBeNull();
  });

  it('throws when a policy returns something that is not a delay', () => {
    expect(() => retryDelay(() => -1, context(1))).toThrow(/must return a delay in ms/);
    expect(() => retryDelay(() => 'soon' as unknown as number, context(1))).toThrow(/returned soon/);
  });
});
