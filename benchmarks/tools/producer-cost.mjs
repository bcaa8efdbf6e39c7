#!/usr/bin/env node
// The producer's own cost of an enqueue, per run: CPU and heap bytes
// allocated, through the benchmark's Threadmill producer, in bulk (calls of
// 1,000 runs) or one by one (64 calls in flight, as in the benchmark), with
// the enqueue script answered in this process (in-process-producer.mjs).
// Allocation is counted from V8's GC events (bytes used before each
// collection less bytes left after the one before), which, unlike CPU time,
// barely moves between runs.
// Usage: node producer-cost.mjs [N=50000] [repeats=6] [bulk|single]
// (prints one figure per repeat; the first includes the warm-up)
import { GCProfiler } from 'node:v8';
import { startProducer } from './in-process-producer.mjs';

const [n = 50_000, repeats = 6] = process.argv.slice(2, 4).map(Number);
const producer = await startProducer(process.argv[4] !== 'single');
for (let r = 0; r < repeats; r++) {
  const profiler = new GCProfiler();
  profiler.start();
  const heapBefore = process.memoryUsage().heapUsed;
  const cpuBefore = process.cpuUsage();
  await producer.enqueue(n);
  const cpu = process.cpuUsage(cpuBefore);
  const heapAfter = process.memoryUsage().heapUsed;
  let allocated = 0;
  let left = heapBefore;
  for (const { beforeGC, afterGC } of profiler.stop().statistics) {
    allocated += beforeGC.heapStatistics.usedHeapSize - left;
    left = afterGC.heapStatistics.usedHeapSize;
  }
  allocated += heapAfter - left;
  console.log(
    `repeat ${r + 1}: ${((cpu.user + cpu.system) / n).toFixed(2)} µs CPU and ${Math.round(allocated / n)} bytes allocated per run`,
  );
}
await producer.stop();
