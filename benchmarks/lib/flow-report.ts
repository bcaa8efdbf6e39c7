import Table from 'cli-table3';
import { metric, ratio, spread, type ModeRuns, type Spread } from './aggregate.js';
import type { FlowMemoryRow } from './flow-memory.js';
import { FLOW_IN_FLIGHT, type FlowOptions } from './flow-phase.js';
import { cell, fmt } from './report-tables.js';
import type { SystemSpec } from './systems.js';

/** The Threadmill system the flow targets are checked on, and the peer they name. */
const OURS = 'threadmill-defaults';
const PEER = 'bullmq';

/** A target row of the report (report.ts), for the flow targets. */
export interface FlowTarget {
  target: string;
  measured: string;
  met: boolean | undefined;
}

/** System `key`'s flow drain over its plain drain of as many runs, repeat by repeat. */
function flowOverPlain(runs: ModeRuns, key: string): Spread | undefined {
  const values = (runs[key] ?? [])
    .map((run) => (run.flow?.tasksPerSec ?? NaN) / (run['flow-plain']?.tasksPerSec ?? NaN))
    .filter((v) => Number.isFinite(v));
  return values.length > 0 ? spread(values) : undefined;
}

/** One row's cells: the flow drain, the plain drain, their ratio, and Redis's and the worker's cost per run of each. */
function rowCells(runs: ModeRuns, key: string, withRange: boolean): string[] {
  const m = (
    phase: 'flow' | 'flow-plain',
    k: 'tasksPerSec' | 'redisCpuUsPerTask' | 'commandsPerTask' | 'workerCpuUsPerTask',
    digits: number,
  ) => cell(metric(runs, key, phase, k), digits, withRange);
  return [
    m('flow', 'tasksPerSec', 0),
    m('flow-plain', 'tasksPerSec', 0),
    `${cell(flowOverPlain(runs, key), 2, withRange)}×`,
    m('flow', 'redisCpuUsPerTask', 1),
    m('flow-plain', 'redisCpuUsPerTask', 1),
    m('flow', 'commandsPerTask', 2),
    m('flow-plain', 'commandsPerTask', 2),
    m('flow', 'workerCpuUsPerTask', 1),
    m('flow-plain', 'workerCpuUsPerTask', 1),
  ];
}

const HEAD = [
  'flows drained (nodes/s)',
  'plain runs drained (runs/s)',
  'flows / plain',
  'Redis CPU per node (µs)',
  'Redis CPU per plain run (µs)',
  'Redis commands per node',
  'Redis commands per plain run',
  'worker CPU per node (µs)',
  'worker CPU per plain run (µs)',
];

/**
 * The flow phase's figures for one AOF mode: each system's flow drain, its
 * plain drain of as many runs by the same worker, and their costs; then
 * Threadmill's flow drain against each peer's, run by run. Undefined when no
 * system ran the phase.
 */
export function flowSection(
  runs: ModeRuns,
  systems: readonly SystemSpec[],
  mode: string,
  options: FlowOptions | undefined,
): { console: string; markdown: string } | undefined {
  const measured = systems.filter((s) => runs[s.key]?.some((run) => run.flow));
  if (!options || measured.length === 0) return undefined;
  const table = new Table({ head: [`AOF ${mode}, flows`, ...HEAD], style: { head: ['cyan'] } });
  const md = [`| system | ${HEAD.join(' | ')} |`, `| --- | ${HEAD.map(() => '---:').join(' | ')} |`];
  for (const system of measured) {
    table.push([system.label, ...rowCells(runs, system.key, false)]);
    md.push(`| ${system.label} | ${rowCells(runs, system.key, true).join(' | ')} |`);
  }
  const ours = measured.filter((s) => s.key.startsWith('threadmill'));
  const peers = measured.filter((s) => !s.key.startsWith('threadmill'));
  const ratios = new Table({ head: ['flows drained', 'nodes/s'], style: { head: ['cyan'] } });
  const mdRatios = ['| flows drained | nodes/s |', '| --- | ---: |'];
  for (const system of ours) {
    for (const peer of peers) {
      const label = `${system.label} vs ${peer.label}`;
      const r = (withRange: boolean) =>
        `${cell(ratio(runs, system.key, peer.key, 'flow', 'tasksPerSec'), 2, withRange)}×`;
      ratios.push([label, r(false)]);
      mdRatios.push(`| ${label} | ${r(true)} |`);
    }
  }
  const nodes = options.children + 1;
  return {
    console: [table.toString(), ratios.toString()].join('\n'),
    markdown:
      `Flows of 1 parent + ${options.children} children (${fmt(options.flows, 0)} flows, ${fmt(options.flows * nodes, 0)} runs), ` +
      `drained by one worker process, against as many plain runs drained by the same worker:\n\n${md.join('\n')}\n\n` +
      `Each Threadmill row's flow drain against each peer's, run by run:\n\n${mdRatios.join('\n')}\n`,
  };
}

/** The flow memory row as a console table and a section of docs/benchmarks.md. */
export function flowMemoryTables(
  row: FlowMemoryRow,
  systems: readonly SystemSpec[],
): { console: string; markdown: string } {
  const measured = systems.filter((s) => row.results[s.key]);
  const head = [
    'per flow (bytes)',
    `per ${row.children + 1} plain runs (bytes)`,
    'per flow edge, beyond the runs (bytes)',
  ];
  const table = new Table({ head: ['Redis memory of flows', ...head], style: { head: ['cyan'] } });
  const md = [`| system | ${head.join(' | ')} |`, '| --- | ---: | ---: | ---: |'];
  for (const system of measured) {
    const { bytesPerFlow, bytesPerPlainRuns, bytesPerEdge } = row.results[system.key]!;
    const cells = [fmt(bytesPerFlow, 0), fmt(bytesPerPlainRuns, 0), fmt(bytesPerEdge, 1)];
    table.push([system.label, ...cells]);
    md.push(`| ${system.label} | ${cells.join(' | ')} |`);
  }
  return {
    console: table.toString(),
    markdown:
      `### Redis memory per flow edge\n\n` +
      `Growth of Redis's \`used_memory\` over ${fmt(row.flows, 0)} pending flows of 1 parent + ${row.children} children, ` +
      `against as many plain runs; one measurement (see Method):\n\n${md.join('\n')}\n`,
  };
}

/** A ratio's median with its min–max, as the targets table shows it. */
const range = (s: Spread) => `${fmt(s.median, 2)}× (${fmt(s.min, 2)}–${fmt(s.max, 2)})`;

/** The flow targets of issue 48, checked on the figures of AOF off and the flow memory row. */
export function flowTargets(off: ModeRuns, memory: FlowMemoryRow | undefined): FlowTarget[] {
  const rows: FlowTarget[] = [];
  const vsPeer = ratio(off, OURS, PEER, 'flow', 'tasksPerSec');
  if (vsPeer) {
    rows.push({
      target: 'Flows (1 parent + 10 children) drained ≥ 5× BullMQ’s FlowProducer, nodes/s',
      measured: range(vsPeer),
      met: vsPeer.median >= 5,
    });
  }
  const vsPlain = flowOverPlain(off, OURS);
  if (vsPlain) {
    rows.push({
      target: 'Flows drained ≥ 60% of the plain runs’ drain (as many runs, the same worker)',
      measured: range(vsPlain),
      met: vsPlain.median >= 0.6,
    });
  }
  const ours = memory?.results[OURS];
  if (ours) {
    const peer = memory.results[PEER];
    rows.push({
      target: 'Redis memory per flow edge ≤ 64 B beyond the runs themselves',
      measured: `${fmt(ours.bytesPerEdge, 1)} B${peer ? ` (BullMQ ${fmt(peer.bytesPerEdge, 1)} B)` : ''}`,
      met: ours.bytesPerEdge <= 64,
    });
  }
  return rows;
}

/** The Method list's entry for the flow phase, or nothing when it was skipped. */
export function flowMethod(options: FlowOptions | undefined, memory: FlowMemoryRow | undefined): string {
  if (!options) return '';
  const nodes = options.flows * (options.children + 1);
  return `- **Flows.** ${fmt(options.flows, 0)} flows of 1 parent + ${options.children} children (${fmt(nodes, 0)}
  runs), every node the no-op task with its own payload: Threadmill's \`enqueueFlow\` (the module at its defaults), the
  children as the flow's roots and the parent a node \`after\` all of them (each edge at its
  default, \`onFailure: 'fail'\`); BullMQ's \`FlowProducer.add({ name, queueName, children })\`,
  every job \`removeOnComplete\`/\`removeOnFail\` as its producer's. The flows are stored
  one call each, ${FLOW_IN_FLIGHT} in flight, into an emptied Redis before the worker starts; one
  worker process drains them, Threadmill's at its defaults but the concurrency
  (\`--concurrency 100\`: results kept, the default batch and prefetch), BullMQ's as in
  its drain row (concurrency 100); the clock runs from the first handler call to the
  ${fmt(nodes, 0)}th, counted in the worker, and the figure is runs (nodes) per second. Then,
  in the same run, Redis is emptied and ${fmt(nodes, 0)} plain runs are stored through the
  bulk API and drained by a new worker of the same settings: *flows / plain* is the one
  drain over the other, run by run. Redis CPU, commands and worker CPU per node are
  counted as the drain's (see Costs); the commands include those the scripts call.
${
  memory
    ? `- **Memory per flow edge.** On a redis-server of its own, set as the memory row's:
  after \`FLUSHALL\` and \`SCRIPT FLUSH\`, a producer stores one flow (its scripts loaded,
  its queue's keys made) and closes; \`used_memory\` is read, a new producer stores
  ${fmt(memory.flows, 0)} flows and closes, and \`used_memory\` is read again. The same with
  one plain run, then ${fmt(memory.flows * (memory.children + 1), 0)} plain runs through the bulk API. *Per flow edge* is the
  flows' growth less the plain runs', divided by the ${fmt(memory.flows * memory.children, 0)} edges: what
  the flows' structure costs beyond their runs, pending.
`
    : ''
}`;
}
