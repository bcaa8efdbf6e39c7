import { maskUrl } from '@threadmill/nestjs';
import { describe, expect, it } from 'vitest';

describe('maskUrl', () => {
  it('masks the user and password of a URL and keeps the rest', () => {
    expect(maskUrl('redis://:secret@cache:6379/0')).toBe('redis://:***@cache:6379/0');
    expect(maskUrl('rediss://ops:secret@cache:6380')).toBe('rediss://***:***@cache:6380');
    expect(maskUrl('redis://ops@cache')).toBe('redis://***@cache');
    expect(maskUrl('http://:secret@cache:6379')).toBe('http://:***@cache:6379');
    expect(maskUrl('unix:///run/redis.sock?db=1&password=secret')).toBe('unix:///run/redis.sock?db=1&password=***');
    expect(maskUrl('redis://cache:6379/0')).toBe('redis://cache:6379/0');
  });

  it('masks a password that holds "@" or "/" whole', () => {
    expect(maskUrl('redis://:p@ss/word@cache:6379')).toBe('redis://:***@cache:6379');
  });

  it('masks every URL quoted in a message or a command line', () => {
    expect(maskUrl(`connection: got 'http://:secret@cache:6379'; must be redis://`)).toBe(
      `connection: got 'http://:***@cache:6379'; must be redis://`,
    );
    expect(maskUrl('inspect --redis=redis://:a@one --alias x rediss://u:b@two')).toBe(
      'inspect --redis=redis://:***@one --alias x rediss://***:***@two',
    );
  });
});
