import Table from 'cli-table3';
import { IO_MAX_MS, IO_MIN_MS } from '../workers/simulated-io.js';
import { metric, ratio, type ModeRuns } from './aggregate.js';
import type { IoOptions } from './io-workload.js';
import type { Phase, PhaseResult } from './phases.js';
import { cell, fmt, tables, type Column } from './report-tables.js';
import type { SystemSpec } from './systems.js';

const IO_COLUMNS: readonly Column[] = [
  { title: 'I/O tasks drained (tasks/s)', phase: 'io', key: 'tasksPerSec', digits: 0 },
  { title: 'enqueue-to-finish p50 (ms)', phase: 'io', key: 'p50Ms', digits: 2 },
  { title: 'enqueue-to-finish p99 (ms)', phase: 'io', key: 'p99Ms', digits: 2 },
];

/**
 * The I/O workload's figures for one AOF mode: each system's throughput and
 * latency, then each Threadmill system's ratio to each peer, computed run by
 * run; undefined when no system ran the workload.
 */
export function ioSection(
  runs: ModeRuns,
  systems: readonly SystemSpec[],
  mode: string,
  io: IoOptions | undefined,
): { console: string; markdown: string } | undefined {
  const measured = systems.filter((s) => runs[s.key]?.some((run) => run.io));
  if (!io || measured.length === 0) return undefined;
  const figures = tables(runs, measured, IO_COLUMNS, `AOF ${mode}, I/O workload`);
  const ours = measured.filter((s) => s.key.startsWith('threadmill'));
  const peers = measured.filter((s) => !s.key.startsWith('threadmill'));
  const head = ['I/O workload', ...IO_COLUMNS.map((c) => c.title.replace(/ \(.*\)$/, ''))];
  const table = new Table({ head, style: { head: ['cyan'] } });
  const md = [`| ${head.join(' | ')} |`, `| --- | ${IO_COLUMNS.map(() => '---:').join(' | ')} |`];
  for (const system of ours) {
    for (const peer of peers) {
      const r = (phase: Phase, key: keyof PhaseResult, withRange: boolean) =>
        `${cell(ratio(runs, system.key, peer.key, phase, key), 2, withRange)}×`;
      const label = `${system.label} vs ${peer.label}`;
      table.push([label, ...IO_COLUMNS.map((c) => r(c.phase, c.key, false))]);
      md.push(`| ${label} | ${IO_COLUMNS.map((c) => r(c.phase, c.key, true)).join(' | ')} |`);
    }
  }
  const warnings = backlogWarnings(runs, measured, io.rate);
  return {
    console: [figures.console, table.toString(), ...warnings].join('\n'),
    markdown:
      `Tasks that await ${IO_MIN_MS}–${IO_MAX_MS} ms of simulated I/O, concurrency ${io.concurrency} for every system; ` +
      `the latency with ${fmt(io.rate, 0)} runs enqueued per second:\n\n${figures.markdown}\n\n` +
      `Each Threadmill row's ratio to each peer, run by run (above 1× drains faster; below 1× waits less):\n\n` +
      `${md.join('\n')}\n` +
      warnings.map((w) => `\n**${w}**\n`).join(''),
  };
}

/**
 * A system that drains barely faster than the runs arrive (its slowest run
 * under 1.25 times the rate) builds a backlog whenever it slows: its latency
 * then measures how long the phase lasted more than the system. Says so
 * rather than let such a figure pass for queueing plus execution.
 */
function backlogWarnings(runs: ModeRuns, systems: readonly SystemSpec[], rate: number): string[] {
  return systems
    .map((s) => ({ s, slowest: metric(runs, s.key, 'io', 'tasksPerSec')?.min }))
    .filter(({ slowest }) => slowest !== undefined && slowest < rate * 1.25)
    .map(
      ({ s, slowest }) =>
        `${s.label} drained ${fmt(slowest!, 0)} I/O tasks/s in a run, under 1.25× the ${fmt(rate, 0)} enqueued per second: ` +
        `its latency includes a backlog; give a lower --io-rate.`,
    );
}

/** The Method list's entry for the I/O workload, or nothing when it was skipped. */
export function ioMethod(io: IoOptions | undefined): string {
  if (!io) return '';
  return `- **I/O workload.** The same payloads, but each handler awaits a timer of
  ${IO_MIN_MS}–${IO_MAX_MS} ms before it counts the run (whole ms, spread evenly,
  pseudo-random but fixed by the payload's index, so every system awaits the
  same durations for the same runs), as a call to a database or a service
  would; every system at concurrency ${io.concurrency} (Threadmill's tuned row keeps its
  other settings, the defaults row sets only \`--concurrency ${io.concurrency}\`), one worker
  process started for the workload. *Throughput*: ${fmt(io.n, 0)} runs are in Redis
  before the worker starts; the clock runs from the first handler's end to
  the ${fmt(io.n, 0)}th, counted in the worker. *Enqueue-to-finish*: then, with the same
  worker running (warm) and its queue empty, ${fmt(io.n, 0)} runs are enqueued one by
  one at a steady ${fmt(io.rate, 0)} per second, the same arrivals for every system:
  every millisecond the producer enqueues what the clock has made due,
  without waiting for earlier enqueues to answer, so a system that falls
  behind queues its runs rather than slows its producer. Each run carries
  the time of its enqueue call and the worker records the end of its
  handler, on the same clock (high-resolution epoch time, one machine): the
  figure is queueing (storing, claiming, waiting for a free slot) plus
  execution, whose own share is ${(IO_MIN_MS + IO_MAX_MS) / 2} ms on average. The rate is set below
  what every system drains (\`--io-rate\`); the report says so when a
  system drained under 1.25× the rate in a run, its latency then counting a
  backlog. \`--io-tasks\` sizes the workload, 0 skips it.
`;
}
