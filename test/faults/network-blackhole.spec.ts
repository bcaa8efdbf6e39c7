import { RedisUnavailableError, TaskStatus } from '@threadmill/nestjs';
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { FIXTURE_QUEUES } from '../fixtures/fixture-tasks.js';
import { uniqueAlias } from '../support/backend.js';
import { Harness } from '../support/harness.js';
import { NetworkFaultProxy } from '../support/network-fault-proxy.js';
import { report } from './support/fault-report.js';
import { SCENARIO_TIMEOUT_MS, scale } from './support/fault-scale.js';
import { FaultRig } from './support/fault-rig.js';
import { WITHOUT_RETRY } from './support/fault-verdict.js';

const RUNS = scale(2_000, 20_000);
const LEASE_MS = 2_000;
const WORKERS = 2;
const CONCURRENCY = 16;
const PREFETCH = 4;
/** The blackholes, in order, each once the witness counted the share of runs beside it. */
const BLACKHOLES = [
  { ms: 1_000, after: 0.1 },
  { ms: 5_000, after: 0.35 },
  { ms: 2 * LEASE_MS, after: 0.6 },
];
/**
 * Runs that can be started and not yet acknowledged when a blackhole begins:
 * a process holds at most concurrency + prefetch runs. docs/guarantees.md
 * bounds the duplicates of one outage longer than the lease by this; the
 * bound here allows it for every blackhole.
 */
const EXECUTING_AT_MOST = WORKERS * (CONCURRENCY + PREFETCH);
/** How long a run may take to complete after a heal before the test calls it stuck (not a performance claim). */
const PROGRESS_DEADLINE_MS = 60_000;

describe('network fault proxy', () => {
  it('holds a blackholed stream both ways and delivers it whole and in order on heal, delays and resets', async () => {
    const redis = await RedisServer.start();
    const proxy = await NetworkFaultProxy.start(redis.url);
    const direct = new Redis(redis.url);
    const client = new Redis(proxy.url);
    // The reset below is reported as an error event; the client reconnects by itself.
    client.on('error', () => undefined);
    try {
      await client.ping();
      proxy.blackhole();
      const replies = Promise.all(Array.from({ length: 100 }, (_, i) => client.rpush('order', String(i))));
      await delay(300);
      // Nothing reached Redis, and the connection stays open.
      expect(await direct.llen('order')).toBe(0);
      expect(proxy.held).toBeGreaterThan(0);
      proxy.heal();
      expect(await replies).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      expect(await direct.lrange('order', 0, -1)).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
      // A delay holds each chunk at least that long, each way.
      proxy.delay(200);
      const sentAt = performance.now();
      await client.ping();
      expect(performance.now() - sentAt).toBeGreaterThanOrEqual(2 * 200 - 5);
      proxy.delay(0);
      proxy.reset();
      // A reset connection comes back by itself (ioredis reconnects through the proxy).
      expect(await client.llen('order')).toBe(100);
    } finally {
      client.disconnect();
      direct.disconnect();
      await proxy.stop();
      await redis.stop();
    }
  });
});

describe('fault: network blackholes between the worker pool and Redis, then heals', () => {
  let rig: FaultRig | undefined;
  let proxy: NetworkFaultProxy | undefined;
  afterEach(async () => {
    await proxy?.stop();
    await rig?.stop();
  });

  it(
    `loses nothing, charges no attempt that did not start, and makes progress again after each heal (${RUNS} runs)`,
    async () => {
      rig = await FaultRig.start({
        leaseTtlMs: LEASE_MS,
        workers: WORKERS,
        concurrency: CONCURRENCY,
        prefetch: PREFETCH,
      });
      proxy = await NetworkFaultProxy.start(rig.redis.url);
      // The producer, the witness and the results read below bypass the proxy.
      const ids = await rig.enqueue(RUNS, 100, { withoutRetry: 0.5 });
      rig.startPool(proxy.url);
      const faults: { ms: number; leased: number; progressMs: number }[] = [];
      for (const blackhole of BLACKHOLES) {
        await rig.completedAtLeast(RUNS * blackhole.after);
        const leased = await rig.inFlight();
        proxy.blackhole();
        await delay(blackhole.ms);
        const startsBefore = await rig.witness.client.llen(`witness:${rig.alias}:start-log`);
        proxy.heal();
        faults.push({ ms: blackhole.ms, leased, progressMs: await progressAfterHeal(rig, startsBefore) });
      }

      const results = await rig.settle(ids, 120_000);
      const verdict = await rig.verdict(ids, results);
      // A run without a retry policy whose started attempt's lease lapsed in
      // a blackhole ends FAILED by an AcknowledgementTimeoutError, as one whose
      // worker stalled does: accounted for, not lost.
      const startPids = await rig.witness.startPids();
      const failedByLapse = ids.filter((id, i) => {
        const result = results[i];
        return (
          result?.status === TaskStatus.FAILED &&
          result.taskName === WITHOUT_RETRY &&
          result.errors.at(-1)?.errorClass === 'AcknowledgementTimeoutError' &&
          (startPids.get(id)?.length ?? 0) >= 1
        );
      });
      const lost = verdict.lost.filter((id) => !failedByLapse.includes(id));
      const stale = await rig.staleAcks();
      const bound = EXECUTING_AT_MOST * BLACKHOLES.length;
      report({
        scenario: 'Network blackholes between the worker pool and Redis, then heals',
        runs: ids.length,
        faults:
          `blackholes of ${faults.map((f) => `${f.ms / 1000} s (${f.leased} runs leased)`).join(', ')} ` +
          `through a TCP proxy, bytes held both ways and delivered in order on heal (lease ${LEASE_MS / 1000} s)`,
        lost: lost.length,
        duplicates: verdict.duplicates,
        duplicateBound: bound,
        started: verdict.started,
        charged: verdict.charged,
        notes:
          `half the runs without a retry policy; time to progress after each heal (a run started after it completed): ` +
          `${faults.map((f) => `${(f.progressMs / 1000).toFixed(2)} s`).join(', ')}; ` +
          `${failedByLapse.length} without a retry policy FAILED by a lease that lapsed in a blackhole after their start; ` +
          `${stale} stale acknowledgements rejected; final statuses ${JSON.stringify(verdict.statuses)}`,
      });
      expect(lost).toEqual([]);
      expect(verdict.missing).toEqual([]);
      // A blackhole shorter than the lease fails no run; the FAILED runs are
      // those whose started attempts a longer one caught.
      expect(failedByLapse.length).toBeLessThanOrEqual(bound);
      expect(verdict.duplicates).toBeLessThanOrEqual(bound);
      expect(verdict.overcharged).toEqual([]);
    },
    SCENARIO_TIMEOUT_MS,
  );
});

describe('fault: a producer behind a blackhole', () => {
  let redis: RedisServer | undefined;
  let proxy: NetworkFaultProxy | undefined;
  let producer: Harness | undefined;
  afterEach(async () => {
    await proxy?.stop();
    await producer?.close();
    await redis?.stop();
  });

  it('gets RedisUnavailableError within its connectTimeoutMs, never a hang', async () => {
    const CONNECT_TIMEOUT_MS = 2_000;
    redis = await RedisServer.start();
    proxy = await NetworkFaultProxy.start(redis.url);
    producer = await Harness.start({
      options: {
        alias: uniqueAlias('blackhole'),
        connection: proxy.url,
        queues: FIXTURE_QUEUES,
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
      },
    });
    await producer.queue.enqueue('WitnessService.work', [5]);
    proxy.blackhole();
    // On the open, stalled connection, and once more after the first timed out.
    const first = await settled(() => producer!.queue.enqueue('WitnessService.work', [5], { id: 'stalled-1' }));
    const second = await settled(() =>
      producer!.queue.enqueueMany([{ task: 'WitnessService.work', args: [5], id: 'stalled-2' }]),
    );
    proxy.heal();
    console.log(
      `[faults] producer behind a blackhole settled in ${first.ms.toFixed(0)} ms, then ${second.ms.toFixed(0)} ms`,
    );
    for (const { outcome, ms } of [first, second]) {
      expect(outcome).toBeInstanceOf(RedisUnavailableError);
      // The call was written before the link stalled: it may yet be applied.
      expect((outcome as Error).message).toMatch(/may or may not have been stored/);
      expect(ms).toBeLessThan(CONNECT_TIMEOUT_MS + 10_000);
    }
    // Once healed, the producer enqueues again, and a retry with the same id
    // stores the run once whether or not the held call was applied on heal.
    await expect(producer.queue.enqueue('WitnessService.work', [5])).resolves.toBeDefined();
    const appliedOnHeal = (await producer.queue.getResults(['stalled-1', 'stalled-2'])).filter(Boolean).length;
    console.log(`[faults] timed-out enqueues applied once the blackhole healed: ${appliedOnHeal} of 2`);
    await producer.queue.enqueue('WitnessService.work', [5], { id: 'stalled-1' });
    await producer.queue.enqueueMany([{ task: 'WitnessService.work', args: [5], id: 'stalled-2' }]);
    const [counts] = await producer.queue.counts(['default']);
    expect(counts!.ready).toBe(4);
  }, 60_000);
});

/** Whether `enqueue` resolved or the error it rejected with, and when it settled (ms after the call). */
async function settled(enqueue: () => Promise<unknown>): Promise<{ outcome: unknown; ms: number }> {
  const sentAt = performance.now();
  const outcome = await enqueue().then(
    () => 'resolved',
    (error: unknown) => error,
  );
  return { outcome, ms: performance.now() - sentAt };
}

/**
 * Waits until a run whose start the witness logged after the heal (after
 * `startsBefore` starts) completed, and returns how long after the heal.
 */
async function progressAfterHeal(rig: FaultRig, startsBefore: number): Promise<number> {
  const healedAt = performance.now();
  const log = `witness:${rig.alias}:start-log`;
  for (;;) {
    const entries = await rig.witness.client.lrange(log, startsBefore, -1);
    const ids = entries.map((entry) => entry.slice(entry.indexOf(' ') + 1));
    if (ids.length > 0) {
      const counts = await rig.witness.client.hmget(`witness:${rig.alias}:completions`, ...ids);
      if (counts.some((n) => Number(n) > 0)) return performance.now() - healedAt;
    }
    if (performance.now() - healedAt > PROGRESS_DEADLINE_MS) {
      throw new Error(`no run started after the heal completed within ${PROGRESS_DEADLINE_MS} ms`);
    }
    await delay(20);
  }
}
