/** Messages between the benchmark orchestrator and a worker process (IPC). */

/** The benchmark's task payload: about 40 bytes, plus the enqueue time in the latency phases. */
export interface BenchPayload {
  readonly id: number;
  readonly email: string;
  /** Epoch ms (high resolution) of the enqueue call, in the latency phases. */
  readonly t?: number;
}

export type ToWorker = { readonly cmd: 'reset' } | { readonly cmd: 'stats' };

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'reset' }
  | { readonly type: 'progress'; readonly count: number; readonly firstAt: number; readonly lastAt: number }
  | {
      readonly type: 'stats';
      /** CPU time since the last reset, µs. */
      readonly cpuUs: number;
      readonly rssBytes: number;
      /** From each run's enqueue to its `record` call (ms): enqueue-to-start, or to finish after simulated I/O. */
      readonly latencies: number[];
    };

/** Settings the orchestrator passes to a worker process in its environment. */
export interface WorkerEnv {
  readonly REDIS_URL: string;
  readonly BENCH_QUEUE: string;
  readonly BENCH_CONCURRENCY: string;
}

/** High-resolution epoch ms, comparable across processes of one machine. */
export const now = (): number => performance.timeOrigin + performance.now();

/** A payload of about 40 bytes of JSON. */
export const payload = (i: number, t?: number): BenchPayload =>
  t === undefined ? { id: i, email: `user${i}@example.com` } : { id: i, email: `user${i}@example.com`, t };
