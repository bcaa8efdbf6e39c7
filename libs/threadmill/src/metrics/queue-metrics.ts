import { Logger } from '@nestjs/common';
import { Gauge, type Registry } from 'prom-client';
import type { WorkerRecord } from '../backend/task-backend.js';
import type { CapacityReport } from '../capacity/capacity-report.js';
import { SEGMENTS, type TaskInspector } from '../inspector/task-inspector.js';
import type { QueueOverview } from '../inspector/inspector.types.js';

/** What one scrape reads from Redis, shared by every gauge of that scrape. */
interface QueueSnapshot {
  readonly queues: readonly QueueOverview[];
  readonly workers: readonly WorkerRecord[];
  /** Null when Redis's memory could not be read (a managed service may refuse `INFO`). */
  readonly capacity: CapacityReport | null;
}

/** Scrapes closer together than this share one snapshot (several Prometheus servers, retries). */
const SNAPSHOT_TTL_MS = 1_000;

/**
 * Backend-wide gauges, read from Redis when Prometheus scrapes: runs per
 * queue and segment (the queue depth), the age of each queue's oldest ready
 * run, live worker processes per queue, whether Redis answered, and Redis's
 * memory: in use, its limit and the memory projected for kept results. Serve
 * them from one place per backend (the worker pool or one app), or every
 * scrape target reports the same queues.
 *
 * A scrape costs a few reads per queue; nothing is recorded on the hot path.
 */
export class QueueMetrics {
  private readonly logger = new Logger('Threadmill');
  private snapshot: { at: number; value: Promise<QueueSnapshot | null> } | undefined;

  private constructor(private readonly inspector: TaskInspector) {}

  /** Registers the gauges in `registry`; they read the backend through `inspector` at each scrape. */
  static register(inspector: TaskInspector, registry: Registry): void {
    for (const gauge of new QueueMetrics(inspector).gauges()) registry.registerMetric(gauge);
  }

  private gauges(): Gauge[] {
    const registers: Registry[] = [];
    const read = () => this.read();
    const runs = new Gauge({
      name: 'threadmill_queue_runs',
      help: 'Runs in each segment of a queue (ready, deferred, running, successful, failed, quarantined, cancelled).',
      labelNames: ['queue', 'segment'],
      registers,
      async collect() {
        this.reset();
        const snapshot = await read();
        for (const queue of snapshot?.queues ?? []) {
          for (const segment of SEGMENTS) this.set({ queue: queue.queue, segment }, queue[segment]);
        }
      },
    });
    // One series per queue of the backend, computed from the scrape's snapshot.
    const perQueue = (name: string, help: string, value: (queue: QueueOverview, snapshot: QueueSnapshot) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['queue'],
        registers,
        async collect() {
          this.reset();
          const snapshot = await read();
          for (const queue of snapshot?.queues ?? []) this.set({ queue: queue.queue }, value(queue, snapshot!));
        },
      });
    const oldestReadyAge = perQueue(
      'threadmill_queue_oldest_ready_age_seconds',
      'How long the longest-waiting ready run of a queue has waited (0 when none is ready).',
      (queue) => (queue.oldestReadyAgeMs ?? 0) / 1000,
    );
    const paused = perQueue(
      'threadmill_queue_paused',
      '1 while a queue is paused (no worker claims its runs), else 0.',
      (queue) => (queue.paused ? 1 : 0),
    );
    const workers = perQueue(
      'threadmill_workers',
      'Live worker processes (by heartbeat) consuming each queue.',
      (queue, snapshot) => snapshot.workers.filter((worker) => worker.queues.includes(queue.queue)).length,
    );
    const clockOffsets = new Gauge({
      name: 'threadmill_worker_clock_offset_seconds',
      help:
        "How far each live worker process's wall clock runs ahead of Redis's (negative: behind), as the process " +
        'estimated it from Redis replies. Runs do not depend on it; shown times and runAfter dates do (NTP).',
      labelNames: ['worker'],
      registers,
      async collect() {
        this.reset();
        for (const worker of (await read())?.workers ?? []) {
          if (worker.clockOffsetMs !== undefined) this.set({ worker: worker.id }, worker.clockOffsetMs / 1000);
        }
      },
    });
    const redisUp = new Gauge({
      name: 'threadmill_redis_up',
      help: '1 when the last scrape could read the backend from Redis, else 0.',
      registers,
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
    });
    // Redis's memory, from the scrape's capacity report; a figure Redis did not give is left out.
    const memory = (name: string, help: string, value: (capacity: CapacityReport) => number | null) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          this.reset();
          const capacity = (await read())?.capacity;
          const bytes = capacity ? value(capacity) : null;
          if (bytes !== null) this.set(bytes);
        },
      });
    const used = memory('threadmill_redis_memory_bytes', 'Memory Redis uses (used_memory).', (c) => c.usedBytes);
    const max = memory(
      'threadmill_redis_maxmemory_bytes',
      "Redis's memory limit (maxmemory); 0 when none is set.",
      (c) => (c.usedBytes === null ? null : (c.maxBytes ?? 0)),
    );
    const projected = memory(
      'threadmill_redis_memory_projected_bytes',
      'Memory Redis will use once the results kept reach their steady state at the current finish rate ' +
        '(used_memory + runs still to be kept × bytes per run); warn at memoryWarningRatio × maxmemory.',
      (c) => c.projectedBytes,
    );
    return [runs, oldestReadyAge, paused, workers, clockOffsets, redisUp, used, max, projected];
  }

  /** This scrape's snapshot, or null when Redis did not answer (the gauges are left empty). */
  private read(): Promise<QueueSnapshot | null> {
    const now = Date.now();
    if (this.snapshot && now - this.snapshot.at < SNAPSHOT_TTL_MS) return this.snapshot.value;
    const value = Promise.all([
      this.inspector.overview(1),
      this.inspector.liveWorkers(),
      this.inspector.capacity().catch(() => null),
    ]).then(
      ([queues, workers, capacity]) => ({ queues, workers, capacity }),
      (error: Error) => {
        this.logger.warn(`Metrics scrape could not read the queues: ${error.message}`);
        return null;
      },
    );
    this.snapshot = { at: now, value };
    return value;
  }
}
