/**
 * Tasks of another kind than `@Task()` methods, registered at discovery
 * beside them: the Nest handlers (`@EventPattern`, `@MessagePattern`) of the
 * microservice transport. The task explorer registers a backend's sources
 * after its own methods, before it reports the count and writes limits.
 */
export interface TaskSource {
  /** Registers the source's tasks in its backend's registry. */
  register(): void;
}
