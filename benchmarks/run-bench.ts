import { RedisServer } from '@threadmill/nestjs/testing';
import { SingleBar, Presets } from 'cli-progress';
import { Command, InvalidArgumentError, Option } from 'commander';
import { writeFileSync } from 'node:fs';
import * as prettier from 'prettier';
import type { ModeRuns } from './lib/aggregate.js';
import { CpuPlacement } from './lib/cpu-placement.js';
import { runFlowMemoryRow, type FlowMemoryRow } from './lib/flow-memory.js';
import { runFlowPhase, type FlowOptions } from './lib/flow-phase.js';
import { runMemoryRow, type MemoryRow } from './lib/memory-phase.js';
import { MEMORY_SUBJECTS } from './lib/memory-subjects.js';
import { runIoWorkload, type IoOptions } from './lib/io-workload.js';
import type { Phase } from './lib/phase.js';
import { runSystem } from './lib/phases.js';
import { RedisProbe } from './lib/redis-probe.js';
import { renderReport, type BenchReport } from './lib/report.js';
import { SYSTEMS } from './lib/systems.js';

/** Redis persistence settings a run can compare: no AOF, or AOF with each fsync policy. */
const AOF_MODES = ['off', 'everysec', 'always'] as const;
type AofMode = (typeof AOF_MODES)[number];

/** The `--aof` list, each mode checked. @throws InvalidArgumentError naming an unknown mode */
function parseModes(value: string): AofMode[] {
  const modes = value.split(',');
  const unknown = modes.filter((mode) => !(AOF_MODES as readonly string[]).includes(mode));
  if (unknown.length > 0) {
    const named = unknown.map((mode) => JSON.stringify(mode)).join(', ');
    throw new InvalidArgumentError(
      `unknown AOF mode ${named}: give a comma-separated list of ${AOF_MODES.join(', ')}.`,
    );
  }
  return modes as AofMode[];
}

/** Every phase a system may run, in the order a run measures them. */
const PHASES: readonly Phase[] = ['enqueue', 'bulk', 'drain', 'latency', 'roundtrip', 'io', 'flow'];

/** The `--phases` list, each phase checked. @throws InvalidArgumentError naming an unknown phase */
function parsePhases(value: string): Phase[] {
  const phases = value.split(',');
  const unknown = phases.filter((phase) => !(PHASES as readonly string[]).includes(phase));
  if (unknown.length > 0) {
    const named = unknown.map((phase) => JSON.stringify(phase)).join(', ');
    throw new InvalidArgumentError(`unknown phase ${named}: give a comma-separated list of ${PHASES.join(', ')}.`);
  }
  return phases as Phase[];
}

/** Children per flow of the flow phase (issue 48's flows: 1 parent + 10 children). */
const FLOW_CHILDREN = 10;

/**
 * The I/O workload's arrival rate (runs/s): steady, and below what each
 * system drains at concurrency 100, so that its latency is queueing plus
 * execution rather than a backlog growing for as long as the phase lasts.
 */
const IO_RATE = 2_000;

/**
 * `npm run bench`: Threadmill, BullMQ and bee-queue side by side, one worker
 * process each, on one fresh redis-server per AOF mode, the systems
 * alternating from repeat to repeat.
 */
const program = new Command('bench')
  .description('Benchmark Threadmill against BullMQ and bee-queue on a fresh local redis-server.')
  .addOption(new Option('-n, --tasks <n>', 'tasks per phase').argParser(Number).default(20_000))
  .addOption(new Option('-r, --repeats <n>', 'repeats, alternating the systems').argParser(Number).default(5))
  .addOption(
    new Option('--aof <modes>', `AOF modes, comma-separated: ${AOF_MODES.join(', ')}`)
      .argParser(parseModes)
      .default(['off', 'everysec'], 'off,everysec'),
  )
  .addOption(new Option('--systems <keys>', 'systems to run').default(SYSTEMS.map((s) => s.key).join(',')))
  .addOption(
    new Option(
      '--phases <phases>',
      `phases to run, comma-separated: ${PHASES.join(', ')} (latency and roundtrip need drain's worker)`,
    )
      .argParser(parsePhases)
      .default(PHASES, 'all'),
  )
  .addOption(new Option('--no-pin', 'leave every process to the scheduler instead of giving Redis a CPU of its own'))
  .addOption(
    new Option('--memory-runs <n>', 'runs per system of the memory row (0: no memory row)')
      .argParser(Number)
      .default(100_000),
  )
  .addOption(
    new Option('--io-tasks <n>', 'runs of the I/O workload (1–5 ms of simulated I/O each); 0 skips it')
      .argParser(Number)
      .default(5_000),
  )
  .addOption(
    new Option('--io-rate <n>', 'runs enqueued per second for the I/O workload’s latency')
      .argParser(Number)
      .default(IO_RATE),
  )
  .addOption(
    new Option(
      '--flows <n>',
      `flows of 1 parent + ${FLOW_CHILDREN} children for the flow phase and its memory row; 0 skips them`,
    )
      .argParser(Number)
      .default(2_000),
  )
  .addOption(
    new Option(
      '--smoke',
      'a few hundred tasks, one repeat, AOF off, a memory row of 1,000 runs; writes nothing',
    ).default(false),
  )
  .addOption(new Option('--write', 'write docs/benchmarks.md and the charts').default(false))
  .parse();

const options = program.opts<{
  tasks: number;
  repeats: number;
  aof: AofMode[];
  systems: string;
  phases: Phase[];
  pin: boolean;
  memoryRuns: number;
  ioTasks: number;
  ioRate: number;
  flows: number;
  smoke: boolean;
  write: boolean;
}>();
const n = options.smoke ? 300 : options.tasks;
const repeats = options.smoke ? 1 : options.repeats;
const modes: AofMode[] = options.smoke ? ['off'] : options.aof;
// Each system with the phases of `--phases` only; one left with none does not run.
const systems = SYSTEMS.filter((s) => options.systems.split(',').includes(s.key))
  .map((s) => ({ ...s, phases: s.phases.filter((phase) => options.phases.includes(phase)) }))
  .filter((s) => s.phases.length > 0);
// The memory row: runs per system (a thousand in the smoke), and the systems it measures.
const memoryRuns = options.smoke ? Math.min(options.memoryRuns, 1_000) : options.memoryRuns;
const memorySystems = memoryRuns > 0 ? systems.filter((s) => MEMORY_SUBJECTS[s.key]) : [];
/** Runs per enqueue phase of the warm-up pass. */
const WARM_UP_RUNS = 3_000;
const placement = options.pin ? CpuPlacement.plan() : undefined;
const runOptions = {
  n,
  inFlight: 64,
  bulkSize: 1_000,
  latencySamples: options.smoke ? 20 : 200,
  latencyGapMs: 5,
};

// The I/O workload: every system at the same concurrency, fed at the same rate.
const ioOptions: IoOptions = {
  n: options.smoke ? Math.min(options.ioTasks, 200) : options.ioTasks,
  rate: options.ioRate,
  concurrency: 100,
};

// The flow phase: the same flows for every system (a few dozen in the smoke).
const flowOptions: FlowOptions = {
  flows: options.smoke ? Math.min(options.flows, 30) : options.flows,
  children: FLOW_CHILDREN,
};
const flowSystems = flowOptions.flows > 0 ? systems.filter((s) => s.phases.includes('flow')) : [];

const runs: Record<string, ModeRuns> = {};
const bar = new SingleBar(
  { format: 'Benchmarking [{bar}] {value}/{total} runs | {mode} | {system}', hideCursor: true },
  Presets.shades_classic,
);
bar.start(modes.length * repeats * systems.length, 0, { mode: '', system: '' });
// One server per AOF mode, both up throughout: each repeat runs every mode in
// turn, so the AOF comparison is not skewed by this VM's speed drifting
// between the first half of the run and the second.
const servers = new Map<string, { server: RedisServer; probe: RedisProbe }>();
try {
  for (const mode of modes) {
    const server = await RedisServer.start({
      appendonly: mode !== 'off',
      appendfsync: mode === 'always' ? 'always' : 'everysec',
    });
    if (placement) CpuPlacement.bind(server.pid!, placement.redis);
    servers.set(mode, { server, probe: new RedisProbe(server.url) });
    runs[mode] = {};
  }
  if (placement) CpuPlacement.bind(process.pid, placement.bench);
  // A warm-up pass, not recorded: each system's producer enqueues a few
  // thousand runs through both enqueue phases first, so that no system's first
  // repeat measures V8 compiling its producer (the producers share this
  // process; each worker is a process of its own, started cold every run).
  const warmUp = { ...runOptions, n: Math.min(n, WARM_UP_RUNS) };
  for (const spec of systems) {
    const phases = spec.phases.filter((phase) => phase === 'enqueue' || phase === 'bulk');
    if (phases.length === 0) continue;
    const { server, probe } = servers.get(modes[0]!)!;
    bar.update({ mode: 'warm-up', system: spec.label });
    await runSystem({ ...spec, phases }, server.url, probe, warmUp);
  }
  for (let repeat = 0; repeat < repeats; repeat++) {
    for (const mode of modes) {
      const { server, probe } = servers.get(mode)!;
      // Alternate who goes first, so no system always meets a warmer or colder machine.
      const order = systems.map((_, i) => systems[(i + repeat) % systems.length]!);
      for (const spec of order) {
        bar.update({ mode: `AOF ${mode}`, system: spec.label });
        // runSystem's phases are the others: a system of only the I/O workload or flows skips it.
        const own = spec.phases.some((phase) => phase !== 'io' && phase !== 'flow');
        const result = own ? await runSystem(spec, server.url, probe, runOptions) : {};
        if (ioOptions.n > 0 && spec.phases.includes('io')) {
          result.io = await runIoWorkload(spec, server.url, probe, ioOptions);
        }
        if (flowSystems.includes(spec)) Object.assign(result, await runFlowPhase(spec, server.url, probe, flowOptions));
        (runs[mode]![spec.key] ??= []).push(result);
        bar.increment();
      }
    }
  }
} finally {
  for (const { server, probe } of servers.values()) {
    probe.close();
    await server.stop();
  }
}
let memory: MemoryRow | undefined;
if (memorySystems.length > 0) {
  memory = await runMemoryRow(
    memorySystems.map((s) => s.key),
    memoryRuns,
    (key) => bar.update({ mode: 'memory', system: SYSTEMS.find((s) => s.key === key)!.label }),
  );
}
let flowMemory: FlowMemoryRow | undefined;
if (flowSystems.length > 0) {
  flowMemory = await runFlowMemoryRow(flowSystems, flowOptions, (spec) =>
    bar.update({ mode: 'flow memory', system: spec.label }),
  );
}
bar.stop();

const report: BenchReport = {
  n,
  repeats,
  modes,
  systems,
  runs,
  inFlight: runOptions.inFlight,
  bulkSize: runOptions.bulkSize,
  placement: placement?.describe(),
  warmUp: Math.min(n, WARM_UP_RUNS),
  memory,
  io: ioOptions.n > 0 ? ioOptions : undefined,
  ...(flowSystems.length > 0 ? { flows: flowOptions, flowMemory } : {}),
};
const { console: table, markdown, charts } = renderReport(report);
console.log(table);
if (options.write && !options.smoke) {
  // Formatted as the repository's lint expects (`prettier --check .`).
  const config = (await prettier.resolveConfig('docs/benchmarks.md')) ?? {};
  writeFileSync('docs/benchmarks.md', await prettier.format(markdown, { ...config, parser: 'markdown' }));
  for (const [file, svg] of Object.entries(charts)) writeFileSync(file, svg);
  console.log('Wrote docs/benchmarks.md and the charts in docs/images/.');
}
