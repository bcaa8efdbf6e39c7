import { TaskContext } from '../task/task-context.js';

/**
 * The context of a run served by `ThreadmillServer`: what `@Ctx()` gives a
 * handler, and `context.switchToRpc().getContext()` a guard, interceptor or
 * filter. It is the run's {@link TaskContext} (id, attempt, queue, abort
 * signal, the run record) under the name Nest transports use.
 */
export class ThreadmillContext extends TaskContext {
  /** The pattern the run was sent with: its task name. */
  get pattern(): string {
    return this.taskName;
  }
}
