/** Injection token of the prom-client `Registry` the Threadmill metrics are recorded in. */
export const THREADMILL_METRICS_REGISTRY = Symbol('THREADMILL_METRICS_REGISTRY');

/** Injection token of the validated metrics options. */
export const THREADMILL_METRICS_OPTIONS = Symbol('THREADMILL_METRICS_OPTIONS');
