import type { Type } from '@nestjs/common';
import type { FailurePolicy, FlowState } from '../records/flow-records.js';
import type { TaskResult } from '../records/task-result.js';
import type { TaskContract } from '../task/task-contract.js';
import type { EnqueueOptions, MethodName, TaskArgs } from './enqueue-options.interface.js';

export type { FailurePolicy, FlowState } from '../records/flow-records.js';

/** A dependency of a flow node: the name of another node, or the name with the edge's failure policy. */
export type FlowDependencySpec = string | { readonly node: string; readonly onFailure?: FailurePolicy };

/** What a node may set of a run's options: not its id, dedupe or partition (a flow names and places its nodes). */
export type FlowNodeOptions = Pick<EnqueueOptions, 'runAfter' | 'delayMs' | 'priority' | 'queue'> & {
  /** The nodes this one waits for; each edge fails this node when its dependency fails, unless its `onFailure` says otherwise. */
  readonly after?: readonly FlowDependencySpec[];
};

/** A node of a flow: a task run (by method, contract or name) and its dependencies. */
export type FlowNodeSpec =
  | (FlowNodeOptions & { readonly task: Type; readonly method: string; readonly args: readonly unknown[] })
  | (FlowNodeOptions & { readonly task: TaskContract; readonly args: readonly unknown[] })
  | (FlowNodeOptions & { readonly task: string; readonly args: readonly unknown[] });

/** A flow: its nodes by name (names are the flow's own: `[A-Za-z0-9_.:-]`, up to 100 characters). */
export interface FlowSpec {
  readonly nodes: Readonly<Record<string, FlowNodeSpec>>;
  /** Routes the flow on a partitioned backend (a flow lives in one partition); by default a partition in turn. */
  readonly partitionKey?: string;
}

/** A batch: independent runs, and callbacks that run once every run has settled (`docs/flows.md`, "Batches"). */
export interface BatchSpec {
  readonly runs: readonly FlowNodeSpec[];
  /** Runs once every run of the batch has settled, however each ended (its dependencies list the failures). */
  readonly onComplete?: FlowNodeSpec;
  /** Runs once every run of the batch has succeeded; ends FAILED without running when one does not. */
  readonly onSuccess?: FlowNodeSpec;
  readonly partitionKey?: string;
}

/** A stored flow: its id, and the run id of each node by name. */
export interface EnqueuedFlow {
  readonly id: string;
  readonly nodes: Readonly<Record<string, string>>;
}

/** A flow once it has ended: its state and each node's result by name. */
export interface FlowResult {
  readonly id: string;
  readonly state: FlowState;
  readonly nodes: Readonly<Record<string, TaskResult>>;
}

/**
 * A node of a flow typed from its task's method (`flowNode(MathService, 'add', [1, 2], { after: ['x'] })`),
 * as `enqueue` types a run.
 */
export function flowNode<T, M extends MethodName<T>>(
  task: Type<T>,
  method: M,
  args: TaskArgs<T[M]>,
  options?: FlowNodeOptions,
): FlowNodeSpec;
/** A node of a flow typed from a contract (see `defineTask`). */
export function flowNode<A extends readonly unknown[], R>(
  contract: TaskContract<A, R>,
  args: A,
  options?: FlowNodeOptions,
): FlowNodeSpec;
export function flowNode(
  task: Type | TaskContract,
  methodOrArgs: string | readonly unknown[],
  argsOrOptions?: readonly unknown[] | FlowNodeOptions,
  maybeOptions?: FlowNodeOptions,
): FlowNodeSpec {
  if (typeof task === 'function') {
    return { ...maybeOptions, task, method: methodOrArgs as string, args: argsOrOptions as readonly unknown[] };
  }
  return { ...(argsOrOptions as FlowNodeOptions | undefined), task, args: methodOrArgs as readonly unknown[] };
}
