import { setTimeout as delay } from 'node:timers/promises';
import { now, payload } from '../workers/protocol.js';
import type { Producer } from './producers.js';
import type { RedisProbe, RedisSnapshot } from './redis-probe.js';
import type { SystemSpec } from './systems.js';
import { WorkerLink } from './worker-link.js';
import type { Phase } from './phase.js';

export type { Phase } from './phase.js';

/** Figures of one phase of one run. */
export interface PhaseResult {
  readonly tasksPerSec?: number;
  readonly redisCpuUsPerTask?: number;
  readonly commandsPerTask?: number;
  readonly workerCpuUsPerTask?: number;
  readonly workerRssMb?: number;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  /** Redis calls per task by command, for the drain. */
  readonly calls?: Record<string, number>;
}

export interface RunOptions {
  readonly n: number;
  /** Enqueues in flight at once in the single-enqueue phase. */
  readonly inFlight: number;
  readonly bulkSize: number;
  readonly latencySamples: number;
  readonly latencyGapMs: number;
}

function redisCost(before: RedisSnapshot, after: RedisSnapshot, tasks: number): PhaseResult {
  // The probe's own INFO calls are a handful of commands: negligible at N tasks.
  return {
    redisCpuUsPerTask: (after.cpuUs - before.cpuUs) / tasks,
    commandsPerTask: (after.commands - before.commands) / tasks,
  };
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/**
 * The one-by-one phase's load: the payloads 0..n-1 through the single-run
 * API, from `inFlight` callers that each await their enqueue before the next.
 */
export async function enqueueOneByOne(producer: Pick<Producer, 'enqueue'>, n: number, inFlight: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) await producer.enqueue(payload(next++));
    }),
  );
}

/** One run of one system: enqueue one by one, enqueue in bulk, drain, idle latency. */
export async function runSystem(
  spec: SystemSpec,
  url: string,
  probe: RedisProbe,
  options: RunOptions,
): Promise<Partial<Record<Phase, PhaseResult>>> {
  const { n } = options;
  const results: Partial<Record<Phase, PhaseResult>> = {};
  await probe.flush();
  const single = await spec.producer(url, 'bench-single');
  const main = await spec.producer(url, 'bench');
  let worker: WorkerLink | undefined;
  try {
    if (spec.phases.includes('enqueue')) {
      const before = await probe.snapshot();
      const started = now();
      await enqueueOneByOne(single, n, options.inFlight);
      results.enqueue = {
        tasksPerSec: n / ((now() - started) / 1000),
        ...redisCost(before, await probe.snapshot(), n),
      };
    }
    // The bulk phase starts on an empty Redis: the one-by-one phase's runs
    // would otherwise wait through the bulk and drain phases, weighing
    // on each system as its layout has them: in the hash of pending runs that
    // Threadmill shares between queues (the bulk phase would store into a
    // hash of 20,000 to 40,000 fields, and grow its table midway, instead of
    // 0 to 20,000), in the keyspace for BullMQ's key per job, in a key of
    // another queue for bee-queue. (A bulk call of Threadmill's took longer
    // with them, Redis longer to execute it: docs/optimisations.md, the
    // method's change after step 44, measured with the tool `bulk-calls`.)
    if (spec.phases.includes('enqueue')) await probe.flush();
    // The bulk phase fills the queue the drain empties; a system that is not
    // measured on it fills the queue all the same.
    if (spec.phases.includes('bulk') || spec.phases.includes('drain')) {
      const before = await probe.snapshot();
      const started = now();
      for (let first = 0; first < n; first += options.bulkSize) {
        await main.enqueueBulk(
          Array.from({ length: Math.min(options.bulkSize, n - first) }, (_, i) => payload(first + i)),
        );
      }
      if (spec.phases.includes('bulk')) {
        results.bulk = { tasksPerSec: n / ((now() - started) / 1000), ...redisCost(before, await probe.snapshot(), n) };
      }
    }
    if (!spec.phases.includes('drain')) return results;

    // Drain: the queue is full before the workers start; the clock runs from
    // the first handler call to the N-th (counted in the workers, not polled).
    await probe.reset();
    const before = await probe.snapshot();
    worker = await WorkerLink.start(spec.worker, spec.processes, {
      REDIS_URL: url,
      BENCH_QUEUE: 'bench',
      BENCH_CONCURRENCY: String(spec.concurrency),
      ...spec.env,
    });
    const { firstAt, lastAt } = await worker.waitForCount(n, 600_000);
    const after = await probe.snapshot();
    const drained = await worker.stats();
    results.drain = {
      tasksPerSec: n / ((lastAt - firstAt) / 1000),
      ...redisCost(before, after, n),
      workerCpuUsPerTask: drained.cpuUs / n,
      workerRssMb: drained.rssBytes / 2 ** 20,
      calls: Object.fromEntries([...after.calls].map(([command, calls]) => [command, calls / n])),
    };

    // Idle latency: the workers sit idle; runs are trickled in one at a time.
    await delay(300);
    await worker.reset();
    for (let i = 0; i < options.latencySamples; i++) {
      await main.enqueue(payload(i, now()));
      await delay(options.latencyGapMs);
    }
    await worker.waitForCount(options.latencySamples, 60_000);
    const { latencies } = await worker.stats();
    results.latency = { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };

    // Request/response: one send at a time to the idle workers, from the
    // call to the handler's value received.
    if (spec.phases.includes('roundtrip') && main.roundTrip) {
      const times: number[] = [];
      for (let i = 0; i < options.latencySamples; i++) {
        const started = now();
        await main.roundTrip(payload(i));
        times.push(now() - started);
        await delay(options.latencyGapMs);
      }
      results.roundtrip = { p50Ms: percentile(times, 50), p99Ms: percentile(times, 99) };
    }
  } finally {
    await worker?.stop();
    await single.close();
    await main.close();
  }
  return results;
}
