import { collectDefaultMetrics, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { RunEvents } from '../events/run-events.js';
import { RunMetrics } from './run-metrics.js';

/** The metrics of one process, as prom-client serialises a registry (what the supervisor aggregates). */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** The supervisor asks a pool member for its metrics (at each scrape). */
export interface MetricsRequest {
  readonly type: 'threadmill:metrics-request';
  readonly id: number;
}

/** A pool member's metrics: the answer to a request, or sent unasked just before it exits. */
export interface MetricsReply {
  readonly type: 'threadmill:metrics';
  /** The request answered; 0 for the final snapshot of an exiting member. */
  readonly id: number;
  readonly metrics: MetricsSnapshot;
}

export function isMetricsRequest(message: unknown): message is MetricsRequest {
  return (message as MetricsRequest | null)?.type === 'threadmill:metrics-request';
}

export function isMetricsReply(message: unknown): message is MetricsReply {
  return (message as MetricsReply | null)?.type === 'threadmill:metrics';
}

/**
 * The metrics of a pool member: its run counters and process metrics, kept
 * in its own registry and handed to the supervisor over IPC when asked. The
 * supervisor serves the pool's sum, so Prometheus scrapes one port per
 * container however many processes it runs.
 */
export class MemberMetrics {
  private readonly registry = new Registry();
  private readonly unsubscribe: () => void;
  private readonly onMessage = (message: unknown) => {
    if (isMetricsRequest(message)) void this.send(message.id);
  };

  constructor(events: RunEvents) {
    this.unsubscribe = events.subscribe(new RunMetrics(this.registry));
    collectDefaultMetrics({ register: this.registry });
    process.on('message', this.onMessage);
  }

  /**
   * Sends the final counts before the process exits, so the pool's counters
   * keep what this process counted after it is gone (recycling, scaling down).
   */
  async close(): Promise<void> {
    process.off('message', this.onMessage);
    this.unsubscribe();
    await this.send(0);
  }

  private async send(id: number): Promise<void> {
    if (!process.send || !process.connected) return;
    const reply: MetricsReply = { type: 'threadmill:metrics', id, metrics: await this.registry.getMetricsAsJSON() };
    await new Promise<void>((resolve) => process.send!(reply, () => resolve()));
  }
}
