import { decodeJson } from '../codec/json-codec.js';
import type { FailurePolicy, FlowOutcomeStatus, StoredDependency } from '../records/flow-records.js';
import type { TaskError } from '../records/task-result.js';
import { listedDependency } from '../rules/flow-rules.js';

/** One dependency of a flow node, as `context.dependencies()` gives it. */
export interface FlowDependency<R = unknown> {
  /** Its run id. */
  readonly id: string;
  /** Its name in the flow. */
  readonly name: string;
  /** Its first outcome; PENDING while it has none (only under a `continue` edge). */
  readonly status: FlowOutcomeStatus | 'PENDING';
  /** The edge's failure policy. */
  readonly onFailure: FailurePolicy;
  /** What it returned, when it succeeded. */
  readonly result?: R;
  /** The error it failed or was quarantined with (none for a cancel). */
  readonly error?: TaskError;
}

/** The dependency as listed to its dependent: none for a removed edge's failure. */
export function flowDependency<R>(stored: StoredDependency): FlowDependency<R>[] {
  if (!listedDependency(stored.onFailure, stored.outcome)) return [];
  const base = { id: stored.id, name: stored.name, onFailure: stored.onFailure };
  if (stored.outcome === undefined) return [{ ...base, status: 'PENDING' }];
  const value = stored.value ?? '';
  if (stored.outcome === 'SUCCESSFUL') {
    return [
      value === ''
        ? { ...base, status: 'SUCCESSFUL' }
        : { ...base, status: 'SUCCESSFUL', result: decodeJson<R>(value) },
    ];
  }
  return [
    value === ''
      ? { ...base, status: stored.outcome }
      : { ...base, status: stored.outcome, error: decodeJson<TaskError>(value) },
  ];
}
