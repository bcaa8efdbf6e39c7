#!/usr/bin/env node
// Where a producer's garbage comes from, per run: a sampling heap profile of
// the benchmark's Threadmill producer enqueuing one by one (64 callers that
// each await their enqueue) or in bulk (calls of 1,000), after a warm-up of
// the same, summarised by heap-summary.mjs as bytes per run by the function
// that allocated them. As in producer-cost.mjs, the enqueue script is
// answered in this process (in-process-producer.mjs), so only the producer's
// own code is profiled.
// Run with `node --no-turbo-inlining` to see each function's own share
// rather than its inliner's.
// Usage: node [--no-turbo-inlining] heap-enqueue.mjs [N=30000] [single|bulk] [top=20]
import { execFileSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startProducer } from './in-process-producer.mjs';

const [n = 30_000, mode = 'single', top = 20] = process.argv.slice(2).map((v, i) => (i === 1 ? v : Number(v)));
const producer = await startProducer(mode === 'bulk');
await producer.enqueue(n);
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 256,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
await producer.enqueue(n);
const { profile } = await session.post('HeapProfiler.stopSampling');
session.disconnect();
await producer.stop();
const dir = mkdtempSync(join(tmpdir(), 'tm-heap-'));
const file = join(dir, 'profile.json');
writeFileSync(file, JSON.stringify(profile));
const summary = fileURLToPath(new URL('heap-summary.mjs', import.meta.url));
process.stdout.write(execFileSync(process.execPath, [summary, file, String(n), String(top)]));
rmSync(dir, { recursive: true });
