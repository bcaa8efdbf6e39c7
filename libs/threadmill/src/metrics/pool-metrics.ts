import { Logger } from '@nestjs/common';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { AggregatorRegistry, collectDefaultMetrics, Registry } from 'prom-client';
import type { RunEvents } from '../events/run-events.js';
import type { TaskInspector } from '../inspector/task-inspector.js';
import { isMetricsReply, type MetricsRequest, type MetricsSnapshot } from './member-metrics.js';
import { QueueMetrics } from './queue-metrics.js';
import { RunMetrics } from './run-metrics.js';

/** How long a scrape waits for a pool member's answer before using its previous one. */
const MEMBER_TIMEOUT_MS = 1_000;

/** Metric types whose values carry over once their process is gone (gauges describe a live process only). */
const CUMULATIVE = new Set(['counter', 'histogram']);

/**
 * The worker pool's Prometheus endpoint (`--metrics-port`), served by the
 * supervisor: at each scrape it asks every pool member for its metrics over
 * IPC and serves their sum with its own (reaper outcomes, queue gauges read
 * from Redis, process metrics). Counters stay monotonic across recycling and
 * restarts: a member's last snapshot is kept when it exits. What a SIGKILLed
 * member counted since the previous scrape is lost with it.
 */
export class PoolMetrics {
  private readonly logger = new Logger('Threadmill');
  private readonly own = new Registry();
  private readonly unsubscribe: () => void;
  /** The members attached and not yet retired: a member counts here until its final counts are in `retired`. */
  private readonly members = new Set<ChildProcess>();
  /** The latest snapshot of each live member. */
  private readonly latest = new Map<ChildProcess, MetricsSnapshot>();
  /** Answers awaited, by request id. */
  private readonly waiting = new Map<number, (snapshot: MetricsSnapshot) => void>();
  /**
   * The cumulative metrics of members that exited. Appended on retirement;
   * its head is summed into one snapshot in the background, swapped in
   * synchronously, so a scrape always sees each retired member exactly once.
   */
  private retired: MetricsSnapshot[] = [];
  /** The running compaction of `retired`; compactions run one after another. */
  private compaction: Promise<void> = Promise.resolve();
  private nextId = 1;
  private server: Server | undefined;

  constructor(events: RunEvents, inspector: TaskInspector) {
    this.unsubscribe = events.subscribe(new RunMetrics(this.own));
    // Backend-wide gauges: served once per pool, here, not by each process.
    QueueMetrics.register(inspector, this.own);
    collectDefaultMetrics({ register: this.own });
  }

  /** Follows a new pool member: its answers, and its last counts once it is gone. */
  attach(child: ChildProcess): void {
    this.members.add(child);
    child.on('message', (message) => {
      if (!isMetricsReply(message)) return;
      this.latest.set(child, message.metrics);
      this.waiting.get(message.id)?.(message.metrics);
    });
    // 'disconnect', not 'exit': the channel closes after its last message
    // (the member's final counts) was delivered, while 'exit' may come first.
    child.once('disconnect', () => this.retire(child));
  }

  /** Serves `GET /metrics` on `port`; rejects with a clear error when the port is taken. */
  listen(port: number, host: string): Promise<void> {
    const server = createServer((request, response) => {
      if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
        response.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
        return;
      }
      this.scrape().then(
        (text) => response.writeHead(200, { 'Content-Type': this.own.contentType }).end(text),
        (error: Error) => {
          this.logger.error(`Metrics scrape failed: ${error.message}`);
          response.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${error.message}\n`);
        },
      );
    });
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new Error(
            error.code === 'EADDRINUSE'
              ? `--metrics-port ${port} is already in use on ${host}; pick a free port.`
              : `Cannot serve metrics on ${host}:${port}: ${error.message}`,
          ),
        ),
      );
      server.listen(port, host, () => {
        this.logger.log(`Prometheus metrics at http://${host}:${port}/metrics`);
        resolve();
      });
    });
  }

  /** The pool's metrics in the Prometheus text format. */
  async scrape(): Promise<string> {
    const members = [...this.members];
    const [answers, own] = await Promise.all([
      Promise.all(members.map((child) => this.ask(child))),
      this.own.getMetricsAsJSON(),
    ]);
    // No await from here on: a member that retired while the answers came in
    // is in `retired` and no longer in `members`, so it is counted once.
    const live = answers.filter((s, i): s is MetricsSnapshot => s !== undefined && this.members.has(members[i]!));
    return AggregatorRegistry.aggregate([own, ...this.retired, ...live]).metrics();
  }

  async close(): Promise<void> {
    this.unsubscribe();
    const server = this.server;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Scrapers keep connections alive: close them, or close() waits for them.
    server.closeAllConnections();
    await closed;
  }

  /** Keeps what an exited member counted (its final counts, sent before it disconnected). */
  private retire(child: ChildProcess): void {
    const last = this.latest.get(child);
    this.members.delete(child);
    this.latest.delete(child);
    if (!last) return;
    this.retired.push(last.filter((metric) => CUMULATIVE.has(String(metric.type))));
    // A failed compaction leaves `retired` as it was (still summed at each scrape) and must not stop the next one.
    this.compaction = this.compaction
      .then(() => this.compact())
      .catch((error: Error) => this.logger.warn(`Could not sum the metrics of exited processes: ${error.message}`));
  }

  /** Sums the retired snapshots into one, so a pool that recycles for days scrapes as fast as on day one. */
  private async compact(): Promise<void> {
    const count = this.retired.length;
    if (count < 2) return;
    const summed = await sum(this.retired.slice(0, count));
    // Only retire() appends meanwhile, and compactions do not overlap: the first `count` are the ones summed.
    this.retired = [summed, ...this.retired.slice(count)];
  }

  /** A member's current metrics, or its previous ones when it does not answer in time. */
  private ask(child: ChildProcess): Promise<MetricsSnapshot | undefined> {
    if (!child.connected) return Promise.resolve(this.latest.get(child));
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(this.latest.get(child)), MEMBER_TIMEOUT_MS);
      const settle = (snapshot: MetricsSnapshot | undefined) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(snapshot);
      };
      this.waiting.set(id, settle);
      const request: MetricsRequest = { type: 'threadmill:metrics-request', id };
      child.send(request, (error) => error && settle(this.latest.get(child)));
    });
  }
}

/** Adds snapshots up, label set by label set (prom-client's cluster aggregation). */
function sum(parts: MetricsSnapshot[]): Promise<MetricsSnapshot> {
  return AggregatorRegistry.aggregate(parts).getMetricsAsJSON();
}
