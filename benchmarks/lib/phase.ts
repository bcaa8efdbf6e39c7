/** The phases a benchmark measures a system in. */
export type Phase =
  | 'enqueue'
  | 'bulk'
  | 'drain'
  | 'latency'
  | 'roundtrip'
  // Runs that await simulated I/O (io-workload.ts), run apart from runSystem.
  | 'io';
