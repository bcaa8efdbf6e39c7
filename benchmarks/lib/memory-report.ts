import Table from 'cli-table3';
import type { MemoryRow } from './memory-phase.js';
import type { SystemSpec } from './systems.js';

const bytes = (value: number) => Math.round(value).toLocaleString('en-US');

/** The memory row as a console table and as a section of docs/benchmarks.md. */
export function memoryTables(row: MemoryRow, systems: readonly SystemSpec[]): { console: string; markdown: string } {
  const measured = systems.filter((s) => row.results[s.key]);
  const head = ['Redis memory per run (bytes)', 'pending run', 'finished run, result kept'];
  const table = new Table({ head, style: { head: ['cyan'] } });
  const md = ['| system | pending run (bytes) | finished run, result kept (bytes) |', '| --- | ---: | ---: |'];
  for (const system of measured) {
    const { pendingBytesPerRun, finishedBytesPerRun } = row.results[system.key]!;
    table.push([system.label, bytes(pendingBytesPerRun), bytes(finishedBytesPerRun)]);
    md.push(`| ${system.label} | ${bytes(pendingBytesPerRun)} | ${bytes(finishedBytesPerRun)} |`);
  }
  const markdown =
    `### Redis memory per run\n\n` +
    `Growth of Redis's \`used_memory\` per run over ${bytes(row.n)} runs, each system at its defaults ` +
    `(Threadmill keeps results a day, BullMQ its completed jobs, bee-queue its succeeded jobs), ` +
    `every handler returning \`{ ok: true }\`; one measurement (see Method):\n\n${md.join('\n')}\n`;
  return { console: table.toString(), markdown };
}

/** The memory row's bullet of the Method section. */
export function memoryMethod(row: MemoryRow | undefined): string {
  if (!row) return '- **Memory.** Not measured in this run (`--memory-runs 0`).';
  return `- **Memory.** On a redis-server of its own without AOF and without per-command
  latency histograms (\`latency-tracking no\`: Redis makes one of about 25 KB the first
  time it runs a command and keeps it through \`FLUSHALL\`, so the first system
  measured paid for the commands of those after it), after \`FLUSHALL\` and
  \`SCRIPT FLUSH\`, each system's producer at its defaults enqueues ${bytes(row.n)} tasks in
  bulk (\`enqueueMany\`, \`addBulk\`, \`saveAll\`, 1,000 per call) and closes: *pending
  run* is the growth of \`used_memory\` divided by the tasks. One worker process at the
  system's defaults but the concurrency (100) then runs them, each handler returning
  \`{ ok: true }\`; once the system's own counts (\`counts()\`, \`getJobCounts\`,
  \`checkHealth\`) say every task finished, the worker stops: *finished run, result
  kept* is \`used_memory\` then less \`used_memory\` before the enqueue, divided by the
  tasks. Each reading follows a 1-second settle with neither the producer nor the
  worker connected; memory is as Redis reports it (no \`MEMORY PURGE\`). BullMQ's
  figure includes its event stream (10,000 events at most by default), whose share
  shrinks as the tasks grow; bee-queue publishes a handler's value instead of storing
  it. Where a Threadmill run's bytes go, key by key:
  \`node dist/benchmarks/tools/memory-anatomy.js\`.`;
}
