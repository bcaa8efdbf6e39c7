/**
 * What a case of the scale suite is (`npm run bench:scale`): a name, its 1×
 * size, and a measurement at one size that gives rows of the suite's table.
 */

/** One measured operation at one size: the suite's table row. Figures not measured are `undefined` (`-`). */
export interface ScaleRow {
  /** What the case holds (runs, keys, groups, waiters, queues, schedules). */
  readonly size: number;
  /** The operation, and the unit its ops/s and Redis CPU are counted in. */
  readonly operation: string;
  readonly opsPerS?: number;
  /** Redis CPU (INFO cpu, user + sys) per unit, µs. */
  readonly redisUsPerOp?: number;
  /** Latency of the operation's calls from the client (or as the operation says), ms. */
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  /** Growth of Redis `used_memory` per item held, bytes. */
  readonly redisBytesPerItem?: number;
  /** The resident set of the process the operation says (a producer, a worker, a supervisor), MB. */
  readonly rssMb?: number;
}

export interface ScaleCase {
  readonly name: string;
  /** The 1× size, and the one `SCALE_SMOKE=1` (the CI smoke) uses instead. */
  readonly base: number;
  readonly smokeBase: number;
  /** What `size` counts, for the table's heading. */
  readonly unit: string;
  /** Measures the case at `size` on a fresh Redis of its own. */
  measure(size: number): Promise<ScaleRow[]>;
}
