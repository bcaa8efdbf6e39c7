import { TaskStatus, type FailurePolicy, type TaskResult } from '@threadmill/nestjs';
import type { Redis } from 'ioredis';
import type { StoredFlow } from '../../../libs/threadmill/src/records/flow-records.js';
import type { Kills } from './fault-verdict.js';

/** The flow witness task with a retry policy. */
export const STEP = 'FlowWitnessService.step';
/** The flow witness task without a retry policy: its first failed attempt ends the node FAILED. */
export const STEP_ONCE = 'FlowWitnessService.stepOnce';

/** A node as the test built it: its label (`<flow>:<name>`) and its edges, by node name. */
export interface PlannedNode {
  readonly name: string;
  readonly label: string;
  readonly task: string;
  readonly after: readonly { readonly node: string; readonly onFailure: FailurePolicy }[];
}

/** A flow the test enqueued: its id, its nodes, and each node's run id by name. */
export interface PlannedFlow {
  readonly id: string;
  readonly nodes: readonly PlannedNode[];
  readonly runIds: Readonly<Record<string, string>>;
}

/** What a node's execution read from `context.dependencies()`, as `FlowWitnessService` logs it. */
export interface SeenDependency {
  readonly name: string;
  readonly status: string;
  readonly result?: unknown;
  readonly errorClass?: string;
}

/** One start of a node's handler: its place in the witness's log, its process and attempt. */
export interface LoggedStart {
  readonly at: number;
  readonly pid: number;
  readonly attempt: number;
}

/** What `FlowWitnessService` recorded, by label: starts and ends in the witness's own order, and the first view of its dependencies. */
export class FlowLog {
  private constructor(
    readonly starts: ReadonlyMap<string, readonly LoggedStart[]>,
    /** Places in the log of each end (the work done, before the return). */
    readonly ends: ReadonlyMap<string, readonly number[]>,
    readonly seen: ReadonlyMap<string, readonly SeenDependency[]>,
  ) {}

  static async read(witness: Redis, alias: string): Promise<FlowLog> {
    const prefix = `witness:${alias}:flow`;
    const [entries, seen] = await Promise.all([
      witness.lrange(`${prefix}-log`, 0, -1),
      witness.hgetall(`${prefix}-seen`),
    ]);
    const starts = new Map<string, LoggedStart[]>();
    const ends = new Map<string, number[]>();
    entries.forEach((entry, at) => {
      // `s <pid> <label> <run id> <attempt>` or `e <pid> <label> <run id>`.
      const [kind, pid, label, , attempt] = entry.split(' ');
      if (kind === 's')
        starts.set(label!, [...(starts.get(label!) ?? []), { at, pid: Number(pid), attempt: Number(attempt) }]);
      else ends.set(label!, [...(ends.get(label!) ?? []), at]);
    });
    const views = new Map(Object.entries(seen).map(([label, json]) => [label, JSON.parse(json) as SeenDependency[]]));
    return new FlowLog(starts, ends, views);
  }

  firstStart(label: string): number | undefined {
    return this.starts.get(label)?.[0]?.at;
  }

  firstEnd(label: string): number | undefined {
    return this.ends.get(label)?.[0];
  }
}

/** The oracle's conclusions on a set of flows: every list names the nodes (`<label> ...`) that broke a rule, and must be empty. */
export interface FlowVerdict {
  readonly nodes: number;
  readonly flowStates: Record<string, number>;
  readonly statuses: Record<string, number>;
  /** Flows not ended SUCCESSFUL or FAILED (or gone). */
  readonly unended: string[];
  /** Flows whose state is not FAILED exactly when one of their nodes did not succeed. */
  readonly wrongFlowState: string[];
  /** Nodes without a final status, or whose flow records no outcome for them, or another outcome than their run's. */
  readonly lost: string[];
  /** Nodes that ended SUCCESSFUL but never ran to completion. */
  readonly successWithoutCompletion: string[];
  /** Nodes FAILED uncharged by a dependency, as their edges required. */
  readonly failedByDependency: number;
  /** Nodes of the task without a retry policy FAILED by the SIGKILL of an attempt that had started (or quarantined after repeated kills). */
  readonly failedByKill: number;
  /** Nodes that did not do what their edges say: failed by a dependency without a failed `fail` edge, or not so despite one, or ran though failed so. */
  readonly wrongByPolicy: string[];
  /** FAILED (or QUARANTINED) nodes that neither a dependency nor a kill explains. */
  readonly failedUnexplained: string[];
  /** Nodes whose first start came before the first end of a dependency that succeeded (or no such end was logged). */
  readonly startedBeforeDependency: string[];
  /** Nodes that read other dependencies than their flow's outcomes and edges give. */
  readonly seenWrong: string[];
  /** Completions beyond the first, summed over nodes. */
  readonly duplicates: number;
  /** Handler starts, summed over nodes. */
  readonly started: number;
  /** Attempts charged (the final `attempts`), summed over nodes. */
  readonly charged: number;
  /** Nodes charged more attempts than they started. */
  readonly overcharged: string[];
  /** Nodes that started more than once though no kill cut them. */
  readonly rerunNotCut: string[];
  /** Nodes with a start in a killed process. */
  readonly touched: number;
}

const pidOf = (workerId: string | undefined): number => Number(workerId?.split(':').at(-2));
const count = (tally: Record<string, number>, key: string) => (tally[key] = (tally[key] ?? 0) + 1);
/** The run status each flow outcome stands for. */
const STATUS_OF_OUTCOME: Record<string, TaskStatus> = {
  SUCCESSFUL: TaskStatus.SUCCESSFUL,
  FAILED: TaskStatus.FAILED,
  QUARANTINED: TaskStatus.QUARANTINED,
  CANCELLED: TaskStatus.CANCELLED,
};

/** Whether a node's end is what a SIGKILL may cost a node that had started: only one without a retry policy fails so. */
function endedByKill(result: TaskResult, cut: boolean, kills: Kills): boolean {
  if (!cut || !kills.pids.has(pidOf(result.workerIds.at(-1)))) return false;
  if (result.status === TaskStatus.QUARANTINED) return result.quarantine?.reason === 'lease-expired-repeatedly';
  return result.taskName === STEP_ONCE && result.errors.at(-1)?.errorClass === 'AcknowledgementTimeoutError';
}

/** What a node should read from `context.dependencies()`, given its dependencies' results: a removed edge's failure is left out. */
function expectedSeen(
  node: PlannedNode,
  resultOf: (name: string) => TaskResult | undefined,
  label: (name: string) => string,
) {
  return node.after.flatMap(({ node: name, onFailure }): SeenDependency[] => {
    const result = resultOf(name);
    if (result?.status === TaskStatus.SUCCESSFUL) return [{ name, status: 'SUCCESSFUL', result: label(name) }];
    if (onFailure === 'remove') return [];
    return [{ name, status: result?.status ?? 'PENDING', errorClass: result?.errors.at(-1)?.errorClass ?? '' }];
  });
}

/**
 * Judges flows without `continue` edges (whose dependent's fate depends on
 * the order its dependencies end in) from their stored records, their nodes'
 * runs, the witness's log and the kills.
 */
export function judgeFlows(
  flows: readonly PlannedFlow[],
  stored: ReadonlyMap<string, StoredFlow | null>,
  results: ReadonlyMap<string, TaskResult | null>,
  log: FlowLog,
  kills: Kills,
): FlowVerdict {
  const verdict = {
    nodes: 0,
    flowStates: {} as Record<string, number>,
    statuses: {} as Record<string, number>,
    unended: [] as string[],
    wrongFlowState: [] as string[],
    lost: [] as string[],
    successWithoutCompletion: [] as string[],
    failedByDependency: 0,
    failedByKill: 0,
    wrongByPolicy: [] as string[],
    failedUnexplained: [] as string[],
    startedBeforeDependency: [] as string[],
    seenWrong: [] as string[],
    duplicates: 0,
    started: 0,
    charged: 0,
    overcharged: [] as string[],
    rerunNotCut: [] as string[],
    touched: 0,
  };
  for (const flow of flows) {
    const record = stored.get(flow.id) ?? null;
    const state = record?.state ?? 'GONE';
    count(verdict.flowStates, state);
    if (state !== 'SUCCESSFUL' && state !== 'FAILED') verdict.unended.push(`${flow.id} ${state}`);
    const outcomes = new Map(record?.nodes.map((node) => [node.id, node.outcome]) ?? []);
    const resultOf = (name: string) => results.get(flow.runIds[name]!) ?? undefined;
    const labelOf = (name: string) => flow.nodes.find((node) => node.name === name)!.label;
    let anyFailed = false;
    for (const node of flow.nodes) {
      verdict.nodes++;
      const id = flow.runIds[node.name]!;
      const result = resultOf(node.name);
      const status = result?.status ?? 'MISSING';
      count(verdict.statuses, status);
      const starts = log.starts.get(node.label) ?? [];
      const ends = log.ends.get(node.label) ?? [];
      const cut = kills.cut.has(id);
      verdict.started += starts.length;
      verdict.charged += result?.attempts ?? 0;
      verdict.duplicates += Math.max(ends.length - 1, 0);
      if (starts.some(({ pid }) => kills.pids.has(pid))) verdict.touched++;
      if (result && result.attempts > starts.length)
        verdict.overcharged.push(`${node.label} charged ${result.attempts}, started ${starts.length}`);
      if (starts.length > 1 && !cut) verdict.rerunNotCut.push(`${node.label} started ${starts.length} times`);
      const outcome = outcomes.get(id);
      if (
        !result ||
        ![TaskStatus.SUCCESSFUL, TaskStatus.FAILED, TaskStatus.QUARANTINED].includes(result.status) ||
        STATUS_OF_OUTCOME[outcome ?? ''] !== result.status
      ) {
        verdict.lost.push(`${node.label} ${status}, flow outcome ${outcome ?? 'none'}`);
        continue;
      }
      if (result.status !== TaskStatus.SUCCESSFUL) anyFailed = true;
      if (result.status === TaskStatus.SUCCESSFUL && ends.length === 0)
        verdict.successWithoutCompletion.push(node.label);
      const failingEdge = node.after.find(
        ({ node: name, onFailure }) => onFailure === 'fail' && resultOf(name)?.status !== TaskStatus.SUCCESSFUL,
      );
      const byDependency =
        result.status === TaskStatus.FAILED && result.errors.at(-1)?.errorClass === 'DependencyFailedError';
      if (
        byDependency !== (failingEdge !== undefined) ||
        (byDependency && (starts.length > 0 || result.attempts !== 0))
      ) {
        verdict.wrongByPolicy.push(
          `${node.label} ${status} by ${result.errors.at(-1)?.errorClass ?? 'nothing'}, ${starts.length} starts, failing fail edge: ${failingEdge?.node ?? 'none'}`,
        );
        continue;
      }
      if (byDependency) {
        verdict.failedByDependency++;
        continue;
      }
      if (result.status !== TaskStatus.SUCCESSFUL) {
        if (endedByKill(result, cut, kills)) verdict.failedByKill++;
        else
          verdict.failedUnexplained.push(
            `${node.label} ${status} by ${result.errors.at(-1)?.errorClass ?? result.quarantine?.reason}`,
          );
      }
      // It ran: after every dependency that succeeded had done its work, and it read what the flow holds.
      const first = log.firstStart(node.label);
      if (first === undefined) continue;
      for (const { node: name } of node.after) {
        if (resultOf(name)?.status !== TaskStatus.SUCCESSFUL) continue;
        const end = log.firstEnd(labelOf(name));
        if (end === undefined || end > first)
          verdict.startedBeforeDependency.push(`${node.label} at ${first}, ${name} ended at ${end ?? 'never'}`);
      }
      // An execution a kill cut before its end logged no view; one that ended did (a success always has).
      const seen = log.seen.get(node.label);
      const expected = expectedSeen(node, resultOf, labelOf);
      if ((seen !== undefined || ends.length > 0) && JSON.stringify(seen) !== JSON.stringify(expected)) {
        verdict.seenWrong.push(`${node.label} read ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
      }
    }
    if ((state === 'SUCCESSFUL' || state === 'FAILED') && (state === 'FAILED') !== anyFailed) {
      verdict.wrongFlowState.push(`${flow.id} ${state}`);
    }
  }
  return verdict;
}
