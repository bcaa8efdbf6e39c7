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

/** Where the monotonic clock's 0 is on the wall clock (epoch ms): the process's start, until the wall clock steps. */
let anchor = performance.timeOrigin;
/** How far the wall clock may stray from the anchored monotonic one before the anchor follows it (ms). */
const STEP_MS = 5;

/**
 * High-resolution epoch ms, comparable across the processes of one machine
 * (an enqueue time carried in a payload, a start recorded by a worker). The
 * monotonic clock, anchored to the wall clock at the process's start and
 * again whenever the two part by more than {@link STEP_MS}: a step of the
 * system clock (a VM's clock sync) would otherwise leave a long-lived
 * process on the clock it started with, and every time it compares with a
 * younger process's off by the step (one run measured every system's idle
 * latency at about 7.8 s after such a step, p50 and p99 alike).
 */
export const now = (): number => {
  const t = performance.now();
  const wall = Date.now();
  if (Math.abs(wall - (anchor + t)) > STEP_MS) anchor = wall - t;
  return anchor + t;
};

/** A payload of about 40 bytes of JSON. */
export const payload = (i: number, t?: number): BenchPayload =>
  t === undefined ? { id: i, email: `user${i}@example.com` } : { id: i, email: `user${i}@example.com`, t };
