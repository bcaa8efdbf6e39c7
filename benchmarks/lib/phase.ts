/** The phases a benchmark measures a system in. */
export type Phase =
  | 'enqueue'
  | 'bulk'
  | 'drain'
  | 'latency'
  | 'roundtrip'
  // Runs that await simulated I/O (io-workload.ts), run apart from runSystem.
  | 'io'
  // Flows of a parent and its children, drained (flow-phase.ts), run apart from runSystem;
  | 'flow'
  // and as many plain runs, drained by the same worker, the flows' yardstick (not a phase of its own).
  | 'flow-plain';
