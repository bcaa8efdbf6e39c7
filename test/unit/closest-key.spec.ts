import { describe, expect, it } from 'vitest';
import { closestKey } from '../../libs/threadmill/src/options/closest-key.js';

const TASK_OPTIONS = [
  'name',
  'backend',
  'queue',
  'priority',
  'retry',
  'leaseTtlMs',
  'timeoutMs',
  'resultTtlMs',
  'schedule',
  'limit',
];

describe('the closest option to a misspelt key', () => {
  it('is found for swapped, missing, extra or wrong letters, whatever the case', () => {
    expect(closestKey('nmae', TASK_OPTIONS)).toBe('name');
    expect(closestKey('retries', TASK_OPTIONS)).toBe('retry');
    expect(closestKey('priorty', TASK_OPTIONS)).toBe('priority');
    expect(closestKey('queues', TASK_OPTIONS)).toBe('queue');
    expect(closestKey('resultTTLMs', TASK_OPTIONS)).toBe('resultTtlMs');
    expect(closestKey('timeout', TASK_OPTIONS)).toBe('timeoutMs');
  });

  it('is one the key begins or that begins it, when no option is near', () => {
    expect(closestKey('lease', TASK_OPTIONS)).toBe('leaseTtlMs');
    expect(closestKey('retryPolicy', TASK_OPTIONS)).toBe('retry');
  });

  it('is none for a key far from every option', () => {
    expect(closestKey('qos', TASK_OPTIONS)).toBeUndefined();
    expect(closestKey('delay', TASK_OPTIONS)).toBeUndefined();
    expect(closestKey('attempts', TASK_OPTIONS)).toBeUndefined();
  });
});
