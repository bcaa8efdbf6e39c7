import { Injectable, NotFoundException } from '@nestjs/common';
import { TaskQueue, TaskStatus, type TaskResult } from '@threadmill/nestjs';
import { BATCH_QUEUES } from '@threadmill/demo-tasks';
import { randomUUID } from 'node:crypto';
import { DEMO_MIX, demoItem, type DemoKind } from './demo-mix.js';

const CHUNK = 500;

interface Batch {
  readonly id: string;
  readonly ids: string[];
  readonly kinds: DemoKind[];
  /** successful + failed runs of the demo queues before the batch, to count progress from. */
  readonly baseline: number;
  readonly enqueueMs: number;
}

/** Progress of a batch, as the demo's progress bar shows it. */
export interface BatchProgress {
  readonly total: number;
  readonly finished: number;
}

/** The end-of-demo figures. */
export interface BatchSummary {
  readonly total: number;
  readonly byStatus: Record<string, number>;
  readonly byKind: { label: string; runs: number; successful: number; failed: number }[];
  readonly retriedRuns: number;
  readonly retries: number;
  readonly enqueueMs: number;
  /** First enqueue to last finish, all runs. */
  readonly wallMs: number;
  /** Runs not deferred on purpose, per second from the first enqueue to the last of them finishing. */
  readonly throughput: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Enqueues demo batches the way a real producer would, and reports on them. */
@Injectable()
export class DemoBatchService {
  private readonly batches = new Map<string, Batch>();

  constructor(private readonly queue: TaskQueue) {}

  async start(count: number): Promise<{ batchId: string; enqueued: number; enqueueMs: number }> {
    const baseline = await this.finishedRuns();
    const started = performance.now();
    const ids: string[] = [];
    const kinds: DemoKind[] = [];
    for (let first = 0; first < count; first += CHUNK) {
      const items = [];
      for (let i = first; i < Math.min(first + CHUNK, count); i++) {
        const { kind, item } = demoItem(i);
        kinds.push(kind);
        items.push(item);
      }
      const results = await this.queue.enqueueMany(items);
      for (const result of results) ids.push(result.id);
    }
    const batch = { id: randomUUID(), ids, kinds, baseline, enqueueMs: performance.now() - started };
    this.batches.set(batch.id, batch);
    return { batchId: batch.id, enqueued: ids.length, enqueueMs: Math.round(batch.enqueueMs) };
  }

  async progress(batchId: string): Promise<BatchProgress> {
    const batch = this.get(batchId);
    const finished = Math.min((await this.finishedRuns()) - batch.baseline, batch.ids.length);
    return { total: batch.ids.length, finished };
  }

  async summary(batchId: string): Promise<BatchSummary> {
    const batch = this.get(batchId);
    const results: TaskResult[] = [];
    for (let first = 0; first < batch.ids.length; first += 1_000) {
      const chunk = await this.queue.getResults(batch.ids.slice(first, first + 1_000));
      for (const result of chunk) if (result) results.push(result);
    }
    const byStatus: Record<string, number> = {};
    for (const status of Object.values(TaskStatus)) byStatus[status] = 0;
    const latencies: number[] = [];
    let first = Infinity;
    let last = 0;
    let lastImmediate = 0;
    let immediate = 0;
    let retries = 0;
    let retriedRuns = 0;
    const byKind = DEMO_MIX.map((entry) => ({ label: entry.label, runs: 0, successful: 0, failed: 0 }));
    results.forEach((result, i) => {
      byStatus[result.status] = (byStatus[result.status] ?? 0) + 1;
      const kind = byKind[DEMO_MIX.findIndex((entry) => entry.kind === batch.kinds[i])]!;
      kind.runs++;
      if (result.status === TaskStatus.SUCCESSFUL) kind.successful++;
      if (result.status === TaskStatus.FAILED) kind.failed++;
      if (result.attempts > 1) {
        retriedRuns++;
        retries += result.attempts - 1;
      }
      first = Math.min(first, result.enqueuedAt.getTime());
      if (result.finishedAt) {
        last = Math.max(last, result.finishedAt.getTime());
        if (batch.kinds[i] !== 'deferred-report') {
          immediate++;
          lastImmediate = Math.max(lastImmediate, result.finishedAt.getTime());
        }
        // Deferred runs wait on purpose: their latency says nothing about the queue.
        if (batch.kinds[i] !== 'deferred-report' && result.attempts === 1) {
          latencies.push(result.finishedAt.getTime() - result.enqueuedAt.getTime());
        }
      }
    });
    latencies.sort((a, b) => a - b);
    const wallMs = Math.max(last - first, 1);
    const immediateMs = Math.max(lastImmediate - first, 1);
    return {
      total: batch.ids.length,
      byStatus,
      byKind,
      retriedRuns,
      retries,
      enqueueMs: Math.round(batch.enqueueMs),
      wallMs,
      throughput: Math.round((immediate / immediateMs) * 1000),
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
    };
  }

  private get(batchId: string): Batch {
    const batch = this.batches.get(batchId);
    if (!batch) throw new NotFoundException(`No demo batch ${batchId}`);
    return batch;
  }

  private async finishedRuns(): Promise<number> {
    // The batches' queues only: the scheduled task's runs are not the batch's.
    const counts = await this.queue.counts(BATCH_QUEUES);
    return counts.reduce((sum, c) => sum + c.successful + c.failed, 0);
  }
}
