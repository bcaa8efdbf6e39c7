// The run a backend-level tool stores: the benchmark's no-op task on queue
// `bench` with its ~40-byte payload, encoded as `TaskQueue` would encode it.
// `newRunId` comes from the build the tool measures.
export const benchRun = (newRunId, i) => ({
  id: newRunId(),
  queue: 'bench',
  priority: 0,
  runAt: 0,
  delayMs: 0,
  leaseTtlMs: 0,
  idempotent: false,
  payload: `{"v":1,"task":"bench.noop","args":[{"id":${i},"email":"user${i}@example.com"}]}`,
});
