/**
 * Preloaded into the benchmark's worker by the tool `profile-drain` with
 * HEAP=1 (`node --import`): samples every allocation of the process, those
 * garbage collection has reclaimed since included, and writes the profile to
 * $HEAP_PROFILE when the process gets SIGTERM. A sampling interval of 512
 * bytes keeps the overhead low and small objects counted.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: true,
  // HEAP=survivors leaves out what died young: what is left survived a
  // scavenge, the objects that make scavenges slow and the old space grow.
  includeObjectsCollectedByMinorGC: process.env['HEAP'] !== 'survivors',
});
process.prependOnceListener('SIGTERM', async () => {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  writeFileSync(process.env['HEAP_PROFILE']!, JSON.stringify(profile));
});
