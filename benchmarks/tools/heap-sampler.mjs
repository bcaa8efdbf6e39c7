// Preloaded into a worker (`node --import heap-sampler.mjs`) by
// profile-drain.mjs HEAP=1: samples every allocation of the process, the
// ones garbage collection has reclaimed since included, and writes the
// profile to $HEAP_PROFILE when the process gets SIGTERM. A sampling
// interval of 512 bytes keeps the overhead low and small objects counted.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params = {}) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );
await post('HeapProfiler.enable');
await post('HeapProfiler.startSampling', {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: true,
  // HEAP=survivors leaves out what died young: what is left survived a
  // scavenge, the objects that make scavenges slow and the old space grow.
  includeObjectsCollectedByMinorGC: process.env.HEAP !== 'survivors',
});
process.prependOnceListener('SIGTERM', async () => {
  const { profile } = await post('HeapProfiler.stopSampling');
  writeFileSync(process.env.HEAP_PROFILE, JSON.stringify(profile));
});
