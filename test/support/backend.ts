import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';

/** The URL of the test run's redis-server. */
export const redisUrl = (): string => inject('redisUrl');

/** A fresh backend alias, so a test's keys never meet another test's. */
export const uniqueAlias = (label = 't'): string => `${label}-${randomUUID().slice(0, 8)}`;
