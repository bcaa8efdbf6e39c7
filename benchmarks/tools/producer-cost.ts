/**
 * The producer's own cost of an enqueue, per run: CPU and heap bytes allocated, in bulk or one by one.
 *
 * Run: `node dist/benchmarks/tools/producer-cost.js [N=50000] [repeats=6] [bulk|single]` after `npm run build`
 * (one figure per repeat; the first includes the warm-up).
 *
 * Through the benchmark's Threadmill producer, in bulk (calls of 1,000 runs)
 * or one by one (64 calls in flight, as in the benchmark), with the enqueue
 * script answered in this process (`lib/in-process-producer`). Allocation is
 * counted from V8's GC events (bytes used before each collection less bytes
 * left after the one before), which, unlike CPU time, barely moves between
 * runs.
 */
import { GCProfiler } from 'node:v8';
import { startProducer } from '../lib/in-process-producer.js';

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
