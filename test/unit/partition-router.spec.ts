import { describe, expect, it } from 'vitest';
import { InvalidEnqueueError, PartitionedLimitError, ThreadmillConfigError } from '@threadmill/nestjs';
import { validateOptions } from '../../libs/threadmill/src/options/validate-options.js';
import { routingKey } from '../../libs/threadmill/src/queue/partition-key.js';
import {
  capFromShares,
  capShares,
  rateShares,
} from '../../libs/threadmill/src/backend/partitioned/partition-limits.js';
import { mismatchMessage, viewOf } from '../../libs/threadmill/src/backend/partitioned/partition-record.js';
import { fnv1a, PartitionRouter } from '../../libs/threadmill/src/backend/partitioned/partition-router.js';
import { isUnreachable, PartitionHealth } from '../../libs/threadmill/src/backend/partitioned/partition-health.js';
import { RedisUnavailableError } from '../../libs/threadmill/src/errors/redis-unavailable.error.js';
import { setTimeout as delay } from 'node:timers/promises';
import { keySlot } from '../../libs/threadmill/src/backend/partitioned/partition-tags.js';
import { slotRunId } from '../../libs/threadmill/src/schedule/schedule-plan.js';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('partition routing', () => {
  it('names the partition in the ids it makes: ULIDs, unique, spread round-robin over every partition', () => {
    const router = new PartitionRouter(6);
    const ids = Array.from({ length: 600 }, () => router.newRunId());
    expect(ids.every((id) => ULID.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(600);
    const perPartition = [0, 0, 0, 0, 0, 0];
    for (const id of ids) perPartition[router.partitionOf(id)]!++;
    expect(perPartition).toEqual([100, 100, 100, 100, 100, 100]);
    // Another process routes the same ids the same way, from the ids alone.
    const other = new PartitionRouter(6);
    expect(ids.map((id) => other.partitionOf(id))).toEqual(ids.map((id) => router.partitionOf(id)));
  });

  it('leaves partitions found unreachable out of round-robin, but never keyed runs, and never every partition', () => {
    const down = new Set([1, 4]);
    const router = new PartitionRouter(6, 6, (p) => down.has(p));
    const spread = [0, 0, 0, 0, 0, 0];
    for (let i = 0; i < 400; i++) spread[router.partitionOf(router.newRunId())]!++;
    expect(spread).toEqual([100, 0, 100, 100, 0, 100]);
    // A key's runs still go to the key's partition.
    const key = Array.from({ length: 60 }, (_, i) => `key-${i}`).find((k) => router.partitionOfKey(k) === 1)!;
    expect(router.partitionOf(router.newRunId(key))).toBe(1);
    // Every partition down: round-robin as if none were.
    for (const p of [0, 2, 3, 5]) down.add(p);
    const all = new Set(Array.from({ length: 12 }, () => router.partitionOf(router.newRunId())));
    expect(all).toEqual(new Set([0, 1, 2, 3, 4, 5]));
  });

  it('marks a partition unreachable on connection-type failures only, probes it after the recheck, and lifts the mark on an answer', async () => {
    const probes: number[] = [];
    let answers = false;
    const health = new PartitionHealth((p) => {
      probes.push(p);
      return answers ? Promise.resolve(0) : Promise.reject(new Error('Connection is closed.'));
    }, 50);
    health.failed(2, new Error('ERR wrong number of arguments'));
    expect(health.avoids(2)).toBe(false);
    expect(
      isUnreachable(new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 887 10.0.0.1:7000')),
    ).toBe(true);
    health.failed(2, new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'));
    expect(health.avoids(2)).toBe(true);
    expect(probes).toEqual([]);
    await delay(60);
    // Due: a probe goes out (one at a time), and the partition stays avoided until it answers.
    expect(health.avoids(2)).toBe(true);
    expect(health.avoids(2)).toBe(true);
    expect(probes).toEqual([2]);
    await delay(1);
    expect(health.unreachable()).toEqual([2]);
    answers = true;
    await delay(60);
    expect(health.avoids(2)).toBe(true);
    await delay(1);
    expect(probes).toEqual([2, 2]);
    expect(health.avoids(2)).toBe(false);
    // Any other call's answer lifts a mark at once.
    health.failed(3, new RedisUnavailableError('test', new Error('ECONNREFUSED')));
    health.answered(3);
    expect(health.avoids(3)).toBe(false);
  });

  it('sends every run of one key to one partition, in every process', () => {
    const [a, b] = [new PartitionRouter(6), new PartitionRouter(6)];
    const partitions = new Set(
      Array.from({ length: 50 }, (_, i) => b.partitionOf((i % 2 === 0 ? a : b).newRunId('customer-42'))),
    );
    expect(partitions).toEqual(new Set([a.partitionOfKey('customer-42')]));
    // Keys spread: 60 keys reach every partition.
    expect(new Set(Array.from({ length: 60 }, (_, i) => a.partitionOfKey(`key-${i}`))).size).toBe(6);
  });

  it('routes caller-chosen ids by a hash of the id, and schedule runs to the home partition', () => {
    const router = new PartitionRouter(4);
    expect(router.partitionOf('order-17')).toBe(fnv1a('order-17') % 4);
    expect(router.partitionOf(slotRunId('nightly', Date.UTC(2026, 0, 1)))).toBe(0);
    // A ULID-shaped id whose last digits name no partition goes by its hash.
    const stranger = '01J0000000000000000000000Z';
    expect(router.partitionOf(stranger)).toBe(fnv1a(stranger) % 4);
  });

  it('finds runs of retired partitions by their ids while the span still holds them', () => {
    const wide = new PartitionRouter(8);
    const ids = Array.from({ length: 16 }, () => wide.newRunId());
    const shrunk = new PartitionRouter(4, 8);
    expect(ids.map((id) => shrunk.partitionOf(id))).toEqual(ids.map((id) => wide.partitionOf(id)));
    // New runs go to the 4 active partitions only.
    expect(new Set(Array.from({ length: 40 }, () => shrunk.partitionOf(shrunk.newRunId())))).toEqual(
      new Set([0, 1, 2, 3]),
    );
  });

  it('computes hash tag slots as Redis Cluster does', () => {
    // CLUSTER KEYSLOT values.
    expect([keySlot('foo'), keySlot('bar'), keySlot('123456789')]).toEqual([12182, 5061, 12739]);
  });
});

describe('limits over partitions', () => {
  it('splits a cap into shares that add up to it, the first partitions taking the remainder', () => {
    expect(capShares('q', 7, 3)).toEqual([3, 2, 2]);
    expect(capFromShares(capShares('q', 7, 3))).toBe(7);
    expect(capShares('q', null, 3)).toEqual([null, null, null]);
    expect(rateShares('q', { max: 10, perMs: 1000, startSlackMs: 50 }, 4).map((share) => share!.max)).toEqual([
      3, 3, 2, 2,
    ]);
  });

  it('refuses a cap or a rate limit below the partition count, naming the queue and the fix', () => {
    expect(() => capShares('payments', 2, 3)).toThrow(PartitionedLimitError);
    expect(() => capShares('payments', 2, 3)).toThrow(/queue "payments" \(2\) is below the backend's 3 partitions/);
    expect(() => rateShares('emails', { max: 1, perMs: 1000, startSlackMs: 0 }, 2)).toThrow(/at least 2/);
  });
});

describe('partition count mismatch', () => {
  it('reports the counts other processes recorded within the minute, and spans the largest', () => {
    const now = 1_000_000;
    const flat = ['4', String(now - 1_000), '8', String(now - 5_000), '2', String(now - 120_000)];
    const view = viewOf(4, flat, now);
    expect(view.span).toBe(8);
    expect(view.others).toEqual([{ partitions: 8, seenAt: now - 5_000 }]);
    expect(mismatchMessage(view)).toMatch(/partitions: 8, and this one with 4: every worker consumes all 8/);
    expect(mismatchMessage(viewOf(4, ['4', String(now)], now))).toBe('');
  });
});

describe('the partitions option and partitionKey', () => {
  it('refuses a partition count outside 1-1024, naming the option', () => {
    expect(validateOptions({ partitions: 6 }).partitions).toBe(6);
    expect(validateOptions({}).partitions).toBe(1);
    expect(() => validateOptions({ partitions: 0 })).toThrow(ThreadmillConfigError);
    expect(() => validateOptions({ partitions: 0 })).toThrow(/partitions/);
    expect(() => validateOptions({ partitions: 1025 })).toThrow(/partitions/);
    expect(() => validateOptions({ partitions: 2.5 })).toThrow(/partitions/);
  });

  it('routes by partitionKey, else by dedupe key, and refuses a bad key or one beside id or dedupe', () => {
    expect(routingKey({}, 'T', undefined)).toBeUndefined();
    expect(routingKey({ partitionKey: 'k' }, 'T', undefined)).toBe('k');
    expect(routingKey({ dedupe: { key: 'd' } }, 'T', undefined)).toBe('d');
    expect(() => routingKey({ partitionKey: '' }, 'T', 3)).toThrow(InvalidEnqueueError);
    expect(() => routingKey({ partitionKey: '' }, 'T', 3)).toThrow(/T \(item 3\).*partitionKey must be a string/);
    expect(() => routingKey({ partitionKey: 'k', id: 'x' }, 'T', undefined)).toThrow(/cannot be combined with id/);
    expect(() => routingKey({ partitionKey: 'k', dedupe: { key: 'd' } }, 'T', undefined)).toThrow(
      /cannot be combined with dedupe/,
    );
  });
});
