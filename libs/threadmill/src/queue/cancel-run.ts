import type { TaskBackend } from '../backend/task-backend.js';
import { InvalidRunStateError } from '../errors/invalid-run-state.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import { taskResultFromStored } from '../codec/task-result.factory.js';
import { TaskStatus } from '../records/task-status.enum.js';

/** What {@link TaskQueue.cancel} (and `TaskInspector.cancel`) did. */
export interface CancelOutcome {
  readonly id: string;
  /**
   * Whether this call cancelled the run; false when it was CANCELLED already
   * (a second cancel, or one resent after a lost reply): nothing changed.
   */
  readonly cancelled: boolean;
  /**
   * The status the run had: READY (pending, deferred included: withdrawn at
   * once) or RUNNING (its attempt's signal aborts with `CancelledError` within
   * a renewal round), or CANCELLED when it already was.
   */
  readonly previousStatus: TaskStatus.READY | TaskStatus.RUNNING | TaskStatus.WAITING | TaskStatus.CANCELLED;
}

/**
 * Cancels run `id` wherever it is pending or running (see
 * `TaskBackend.cancel`): the one implementation behind `TaskQueue.cancel`
 * and `TaskInspector.cancel`.
 * @throws TaskResultNotFoundError for an unknown id
 * @throws InvalidRunStateError when the run finished otherwise (SUCCESSFUL, FAILED, QUARANTINED)
 */
export async function cancelRun(backend: Pick<TaskBackend, 'load' | 'cancel'>, id: string): Promise<CancelOutcome> {
  if (typeof id !== 'string' || id === '') throw new TaskResultNotFoundError(String(id));
  const fields = await backend.load(id);
  if (!fields) throw new TaskResultNotFoundError(id);
  const { queue } = taskResultFromStored(id, fields);
  const { cancelled, status } = await backend.cancel(id, queue);
  if (cancelled)
    return { id, cancelled, previousStatus: status as TaskStatus.READY | TaskStatus.RUNNING | TaskStatus.WAITING };
  if (status === TaskStatus.CANCELLED) return { id, cancelled, previousStatus: TaskStatus.CANCELLED };
  if (status === '') throw new TaskResultNotFoundError(id);
  throw new InvalidRunStateError(id, 'cancel', status, 'READY (or deferred), WAITING (a flow node) or RUNNING');
}
