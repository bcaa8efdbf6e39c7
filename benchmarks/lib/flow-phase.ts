import { payload } from '../workers/protocol.js';
import type { FlowProducerLink } from './flow-producers.js';
import type { PhaseResult } from './phases.js';
import type { RedisProbe } from './redis-probe.js';
import type { SystemSpec } from './systems.js';
import { enqueueInBulk } from './tool-support.js';
import { WorkerLink } from './worker-link.js';

/** How the flow phase runs: the same for every system. */
export interface FlowOptions {
  /** Flows per measurement, each of one parent and `children` children. */
  readonly flows: number;
  readonly children: number;
}

/** Flow calls in flight at once while the flows are stored (as the one-by-one phase's enqueues). */
export const FLOW_IN_FLIGHT = 64;
/** The drain's deadline. */
const DRAIN_TIMEOUT_MS = 600_000;

/** Runs in `flows` flows of one parent and `children` children. */
export const flowNodes = ({ flows, children }: FlowOptions): number => flows * (children + 1);

/**
 * Stores `flows` flows through `producer`, FLOW_IN_FLIGHT calls at a time: flow
 * i's parent carries payload i·(children + 1), its children the payloads after it.
 */
export async function enqueueFlows(producer: FlowProducerLink, { flows, children }: FlowOptions): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: FLOW_IN_FLIGHT }, async () => {
      while (next < flows) {
        const first = next++ * (children + 1);
        await producer.enqueueFlow(
          payload(first),
          Array.from({ length: children }, (_, i) => payload(first + 1 + i)),
        );
      }
    }),
  );
}

/**
 * Drains the `n` runs stored in queue `bench` with one worker run started for
 * it, as the drain phase does: the clock runs from the first handler call to
 * the n-th, counted in the worker; Redis's cost is charged per run.
 */
async function drain(spec: SystemSpec, url: string, probe: RedisProbe, n: number): Promise<PhaseResult> {
  await probe.reset();
  const before = await probe.snapshot();
  const worker = await WorkerLink.start(spec.worker, spec.processes, {
    REDIS_URL: url,
    BENCH_QUEUE: 'bench',
    BENCH_CONCURRENCY: String(spec.concurrency),
    ...spec.env,
  });
  try {
    const { firstAt, lastAt } = await worker.waitForCount(n, DRAIN_TIMEOUT_MS);
    const after = await probe.snapshot();
    const { cpuUs } = await worker.stats();
    return {
      tasksPerSec: n / ((lastAt - firstAt) / 1000),
      redisCpuUsPerTask: (after.cpuUs - before.cpuUs) / n,
      commandsPerTask: (after.commands - before.commands) / n,
      workerCpuUsPerTask: cpuUs / n,
    };
  } finally {
    await worker.stop();
  }
}

/**
 * The flow phase of one system: `flows` flows of one parent and `children`
 * children are stored through the system's flow API (the parent waits for
 * every child), then drained by one worker run of the system's drain, its
 * figures per node (`flow`); then, on an emptied Redis, as many plain runs
 * stored through its bulk API (1,000 a call) and drained by the same worker (`flow-plain`):
 * what flows cost against runs without edges, in the same run.
 * @throws when the system has no flow API
 */
export async function runFlowPhase(
  spec: SystemSpec,
  url: string,
  probe: RedisProbe,
  options: FlowOptions,
): Promise<{ flow: PhaseResult; 'flow-plain': PhaseResult }> {
  if (!spec.flowProducer)
    throw new Error(`${spec.label} has a flow phase but no flowProducer (benchmarks/lib/systems.ts).`);
  const n = flowNodes(options);
  await probe.flush();
  const flows = await spec.flowProducer(url, 'bench');
  try {
    await enqueueFlows(flows, options);
  } finally {
    await flows.close();
  }
  const flow = await drain(spec, url, probe, n);

  await probe.flush();
  const plain = await spec.producer(url, 'bench');
  try {
    await enqueueInBulk(plain, n);
  } finally {
    await plain.close();
  }
  return { flow, 'flow-plain': await drain(spec, url, probe, n) };
}
