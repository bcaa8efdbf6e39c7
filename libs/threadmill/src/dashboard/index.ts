/**
 * The Threadmill web dashboard: mount {@link ThreadmillDashboardModule} in a
 * Nest HTTP application to see queues, runs, flows, workers and charts in a browser
 * and to requeue, dequeue, purge, pause and resume. Import from `@threadmill/nestjs/dashboard`.
 */
export { ThreadmillDashboardModule } from './dashboard.module.js';
export type {
  DashboardGuard,
  DashboardGuardFunction,
  ThreadmillDashboardAsyncOptions,
  ThreadmillDashboardOptions,
} from './dashboard-options.js';
export type {
  DashboardDequeued,
  DashboardFlow,
  DashboardMetrics,
  DashboardOverview,
  DashboardPauseState,
  DashboardPurged,
  DashboardRequeuedAll,
  DashboardRunPage,
  DashboardWorkers,
  DashboardSchedules,
} from './dashboard-api.types.js';
