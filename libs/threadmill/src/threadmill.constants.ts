/** Injection token of the validated, defaulted {@link ThreadmillOptions}. */
export const THREADMILL_OPTIONS = Symbol('THREADMILL_OPTIONS');

/** Injection token of the {@link RedisConnections} of the backend. */
export const THREADMILL_REDIS = Symbol('THREADMILL_REDIS');

/** Injection token of the options passed to `forRoot` / `forRootAsync`, before validation. */
export const THREADMILL_RAW_OPTIONS = Symbol('THREADMILL_RAW_OPTIONS');

/** Metadata key under which `@Task()` stores its options on a method. */
export const TASK_METADATA = 'threadmill:task';

/**
 * Name of the backend a `ThreadmillModule` without `name` declares, and that
 * tasks, servers and tools without `backend` use.
 */
export const DEFAULT_BACKEND = 'default';
