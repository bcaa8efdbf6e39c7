import { setTimeout as delay } from 'node:timers/promises';
import { now, payload } from '../workers/protocol.js';
import { percentile, type PhaseResult } from './phases.js';
import type { Producer } from './producers.js';
import type { RedisProbe } from './redis-probe.js';
import type { SystemSpec } from './systems.js';
import { WorkerLink } from './worker-link.js';

/** How the I/O workload runs: the same for every system. */
export interface IoOptions {
  /** Runs drained for the throughput, and as many enqueued at `rate` for the latency. */
  readonly n: number;
  /** Runs enqueued per second while the worker executes them. */
  readonly rate: number;
  /** Handler calls in flight per worker process, every system alike. */
  readonly concurrency: number;
}

/** Runs per bulk call when filling the queue for the throughput. */
const BULK_SIZE = 1_000;

/**
 * Enqueues the payloads 0..count-1 one by one at `rate` per second, each
 * carrying the time of its own enqueue call, without waiting for one enqueue
 * before the next: the arrivals follow the clock, not the system's answers, so
 * a system that falls behind is seen to queue rather than slow its producer.
 * The clock is read every millisecond; whatever came due since is enqueued then.
 */
async function enqueueAtRate(producer: Pick<Producer, 'enqueue'>, count: number, rate: number): Promise<void> {
  const started = now();
  const pending: Promise<unknown>[] = [];
  let sent = 0;
  while (sent < count) {
    const due = Math.min(count, Math.floor(((now() - started) / 1000) * rate) + 1);
    while (sent < due) pending.push(producer.enqueue(payload(sent++, now())));
    await delay(1);
  }
  await Promise.all(pending);
}

/**
 * The I/O workload of one system: runs whose handler awaits 1–5 ms of
 * simulated I/O (workers/simulated-io.ts), at one concurrency for every system.
 * Throughput: `n` runs are in Redis before the worker starts; the clock runs
 * from the first handler's end to the n-th, counted in the worker (as the
 * drain). Latency: with the same worker running and its queue empty, `n` runs
 * are enqueued at `rate`; each carries its enqueue time and the worker records
 * the end of its handler, so the figure is queueing plus execution.
 */
export async function runIoWorkload(
  spec: SystemSpec,
  url: string,
  probe: RedisProbe,
  options: IoOptions,
): Promise<PhaseResult> {
  const { n } = options;
  await probe.flush();
  const producer = await spec.producer(url, 'bench');
  let worker: WorkerLink | undefined;
  try {
    for (let first = 0; first < n; first += BULK_SIZE) {
      await producer.enqueueBulk(Array.from({ length: Math.min(BULK_SIZE, n - first) }, (_, i) => payload(first + i)));
    }
    worker = await WorkerLink.start(spec.worker, spec.processes, {
      REDIS_URL: url,
      BENCH_QUEUE: 'bench',
      ...spec.env,
      BENCH_CONCURRENCY: String(options.concurrency),
      BENCH_HANDLER: 'io',
    });
    const { firstAt, lastAt } = await worker.waitForCount(n, 600_000);
    const tasksPerSec = n / ((lastAt - firstAt) / 1000);

    await delay(300);
    await worker.reset();
    await enqueueAtRate(producer, n, options.rate);
    await worker.waitForCount(n, 600_000);
    const { latencies } = await worker.stats();
    return { tasksPerSec, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
  } finally {
    await worker?.stop();
    await producer.close();
  }
}
