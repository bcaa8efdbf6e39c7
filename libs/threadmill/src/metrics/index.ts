/**
 * Prometheus metrics for Threadmill (`@threadmill/nestjs/metrics`; needs
 * `prom-client`). HTTP applications import {@link ThreadmillMetricsModule};
 * worker pools serve theirs with `--metrics-port`.
 */
export { ThreadmillMetricsModule } from './threadmill-metrics.module.js';
export type { ThreadmillMetricsAsyncOptions, ThreadmillMetricsOptions } from './metrics-options.js';
export { THREADMILL_METRICS_REGISTRY } from './metrics.constants.js';
export { RunMetrics, DURATION_BUCKETS } from './run-metrics.js';
export { QueueMetrics } from './queue-metrics.js';
