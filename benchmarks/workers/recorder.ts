import { now, type BenchPayload, type FromWorker, type ToWorker } from './protocol.js';

/**
 * Counts handler calls in a worker process and reports to the orchestrator:
 * progress every 10 ms while it changes, CPU and RSS on request. Every system
 * under test calls `record` from its handler, and does nothing else there but
 * await the simulated I/O of the I/O workload: `record` is the handler's end.
 */
export class Recorder {
  private count = 0;
  private firstAt = 0;
  private lastAt = 0;
  private reported = -1;
  private latencies: number[] = [];
  private cpuBase = process.cpuUsage();

  constructor() {
    process.on('message', (message: ToWorker) => {
      if (message.cmd === 'reset') {
        Object.assign(this, { count: 0, firstAt: 0, lastAt: 0, reported: -1, latencies: [] });
        this.cpuBase = process.cpuUsage();
        this.send({ type: 'reset' });
      } else if (message.cmd === 'stats') {
        const { user, system } = process.cpuUsage(this.cpuBase);
        this.send({
          type: 'stats',
          cpuUs: user + system,
          rssBytes: process.memoryUsage().rss,
          latencies: this.latencies,
        });
      }
    });
    setInterval(() => {
      if (this.count === this.reported) return;
      this.reported = this.count;
      this.send({ type: 'progress', count: this.count, firstAt: this.firstAt, lastAt: this.lastAt });
    }, 10).unref();
    // The orchestrator is gone: do not linger.
    process.once('disconnect', () => process.exit(0));
  }

  record(payload: BenchPayload): void {
    const at = now();
    if (this.count === 0) {
      this.firstAt = at;
      // Charge the phase from its first handler call: process boot is not part of it.
      this.cpuBase = process.cpuUsage();
    }
    this.count++;
    this.lastAt = at;
    if (payload.t !== undefined) this.latencies.push(at - payload.t);
  }

  ready(): void {
    this.send({ type: 'ready' });
  }

  private send(message: FromWorker): void {
    process.send?.(message);
  }
}
