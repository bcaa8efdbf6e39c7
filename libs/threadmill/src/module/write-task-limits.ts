import type { TaskBackend } from '../backend/task-backend.js';
import type { TaskRegistry } from '../task/task.registry.js';
import { storedTaskLimit } from '../limits/task-limit.js';

/**
 * Writes the limits of an application's tasks (`@Task({ limit })`) to its
 * backend, at boot: a limit changed at run time (`TaskInspector.setTaskLimit`)
 * holds until an application that registers the task boots again. A task
 * without a limit in the code leaves what Redis holds for it.
 */
export async function writeTaskLimits(backend: TaskBackend, registry: TaskRegistry): Promise<void> {
  for (const name of registry.names()) {
    const { limit } = registry.get(name);
    if (limit !== undefined) await backend.setTaskLimit(name, storedTaskLimit(limit));
  }
}
