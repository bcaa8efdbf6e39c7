import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchPayload } from './protocol.js';

/**
 * Whether this worker's handler awaits simulated I/O before it counts the
 * run (`BENCH_HANDLER=io`, the I/O workload) or counts it at once (the no-op
 * handler of every other phase).
 */
export const SIMULATED_IO = process.env['BENCH_HANDLER'] === 'io';

/** The shortest and the longest simulated I/O, ms. */
export const IO_MIN_MS = 1;
export const IO_MAX_MS = 5;

/**
 * The simulated I/O of the run with payload `id`: whole ms from IO_MIN_MS to
 * IO_MAX_MS, pseudo-random but fixed by the id, so that every system awaits
 * the same durations for the same runs.
 */
export function ioDelayMs(id: number): number {
  // murmur3's 32-bit finaliser: neighbouring ids get unrelated durations,
  // spread evenly over the range.
  let h = id | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return IO_MIN_MS + ((h >>> 0) % (IO_MAX_MS - IO_MIN_MS + 1));
}

/** Awaits the run's simulated I/O: a timer, as a call to a database or a service would leave the CPU free. */
export const simulateIo = (payload: BenchPayload): Promise<void> => sleep(ioDelayMs(payload.id));
