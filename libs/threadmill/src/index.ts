/**
 * Threadmill for NestJS: the durable, high-performance task queue for Nest,
 * backed by Redis.
 *
 * Glossary:
 * - task: a provider method decorated with `@Task()`.
 * - task run (result): one enqueued invocation of a task, with an id and a {@link TaskResult}.
 * - queue: a named lane of runs; a worker consumes a set of queues.
 * - backend: one Redis keyspace (an alias); its keys share one hash tag. An
 *   application may declare several, one `ThreadmillModule` each, by `name`.
 * - lease: a worker's claim on a run (token and deadline), renewed while it runs.
 * - broker: promotes due deferred runs and reaps expired leases.
 */
export { ThreadmillModule } from './module/threadmill.module.js';
export type {
  RedisConnection,
  ThreadmillModuleOptions,
  ThreadmillOptions,
} from './options/threadmill-options.interface.js';
export type {
  ThreadmillModuleAsyncOptions,
  ThreadmillOptionsFactory,
} from './module/threadmill-async-options.interface.js';
export { maskUrl } from './options/mask-url.js';
export {
  DEFAULT_BACKEND,
  getRunEventsToken,
  getTaskBackendToken,
  getTaskInspectorToken,
  getTaskQueueToken,
  getTaskSchedulerToken,
  getThreadmillOptionsToken,
} from './module/backend-tokens.js';
export { InjectTaskInspector, InjectTaskQueue, InjectTaskScheduler } from './module/inject-backend.decorators.js';
export { Task, type ContractMethod, type TaskBindingOptions } from './task/task.decorator.js';
export { defineTask, TaskContract, type TaskContractOptions } from './task/task-contract.js';
export type { TaskOptions } from './task/task-options.interface.js';
export type { ResultTtl, ResultTtlByOutcome } from './records/result-ttl.js';
export type { EnqueueConfirmation } from './records/enqueue-confirmation.js';
export { TaskContext } from './task/task-context.js';
export type { FlowDependency } from './task/flow-dependency.js';
export type { FlowView, FlowNodeView, FlowNodeDependency } from './inspector/flow-view.js';
export { flowNode } from './queue/flow-options.interface.js';
export type {
  BatchSpec,
  EnqueuedFlow,
  FailurePolicy,
  FlowDependencySpec,
  FlowNodeOptions,
  FlowNodeSpec,
  FlowResult,
  FlowSpec,
  FlowState,
} from './queue/flow-options.interface.js';
export { MAX_LOG_LINES, MAX_LOG_LINE_CHARS, MAX_PROGRESS_CHARS } from './records/run-report-limits.js';
export { TaskQueue } from './queue/task-queue.js';
export { TaskScheduler } from './schedule/task-scheduler.js';
export {
  MAX_CATCH_UP,
  MIN_EVERY_MS,
  SCHEDULE_GRACE_MS,
  type ScheduleCatchUp,
  type ScheduleInfo,
  type ScheduleOverlap,
  type ScheduleTiming,
  type ScheduleUpsert,
  type TaskScheduleOptions,
} from './records/schedule-options.interface.js';
export type {
  DedupeOptions,
  EnqueueByContract,
  EnqueueByMethod,
  EnqueueByName,
  EnqueueManyItem,
  EnqueueManyOptions,
  EnqueueOptions,
  MethodName,
  TaskArgs,
  TaskReturn,
} from './queue/enqueue-options.interface.js';
export type { WaitOptions } from './queue/wait-options.interface.js';
export type { QuarantineReason, QuarantineRecord, TaskError, TaskResult } from './records/task-result.js';
export type {
  PurgeOptions,
  PurgeProgress,
  QueueCounts,
  RequeueableSegment,
  RequeueAllOptions,
  RequeueAllProgress,
  Segment,
  StoredRateLimit,
  StoredTaskLimit,
} from './backend/task-backend.js';
/**
 * Injection tokens a test may override: the backend every part of the module
 * uses (`ThreadmillTestingModule` provides an in-memory one), and the
 * validated options.
 */
export { TaskBackend } from './backend/task-backend.js';
export { MAX_CHUNK_SIZE } from './records/backend-records.js';
export { THREADMILL_OPTIONS } from './threadmill.constants.js';
export { TaskInspector, SEGMENTS, type ListOptions } from './inspector/task-inspector.js';
export { createInspector, type InspectorOptions, type StandaloneInspector } from './inspector/create-inspector.js';
export type { RateLimit } from './limits/rate-limit.js';
export { MAX_LIMIT_KEY_LENGTH, type TaskLimit, type TaskLimitSettings } from './limits/task-limit.js';
export type {
  ConcurrencyCapState,
  TaskLimitState,
  LeaseInfo,
  PauseState,
  QueueOverview,
  RateLimitState,
  WorkerInfo,
} from './inspector/inspector.types.js';
export type { MemoryUsage, MinuteMetrics, WorkerRecord } from './backend/task-backend.js';
export { CLOCK_SKEW_WARNING_MS } from './backend/redis/redis-clock.js';
export type { CapacityReport, KeptOutcome, PerOutcome } from './capacity/capacity-report.js';
export { TaskStatus } from './records/task-status.enum.js';
export {
  RunEvents,
  type RunListener,
  type SettledRun,
  type StaleReason,
  type StartedRun,
} from './events/run-events.js';
export { ExponentialBackoff, type ExponentialBackoffOptions } from './retry/exponential-backoff.js';
export type { RetryContext, RetryPolicy, RetryPolicyFunction, RetryPolicyObject } from './retry/retry-policy.js';
export { runWorker, type RunWorkerOptions } from './pool/run-worker.js';
export {
  ThreadmillWorkerModule,
  THREADMILL_WORKER_OPTIONS,
  type ThreadmillWorkerModuleAsyncOptions,
} from './transport/threadmill-worker.module.js';
export type { ThreadmillServerOptions } from './transport/threadmill-server.options.js';
export type { WorkerOptions } from './worker/worker-options.interface.js';
export { ThreadmillExceptionFilter, type ThreadmillErrorBody } from './http/threadmill-exception.filter.js';
export { ThreadmillError } from './errors/threadmill.error.js';
export { ThreadmillConfigError } from './errors/threadmill-config.error.js';
export { DuplicateTaskError } from './errors/duplicate-task.error.js';
export { InvalidScheduleError } from './errors/invalid-schedule.error.js';
export { InvalidTaskError } from './errors/invalid-task.error.js';
export { UnknownTaskError } from './errors/unknown-task.error.js';
export { InvalidEnqueueError } from './errors/invalid-enqueue.error.js';
export { InvalidFlowError } from './errors/invalid-flow.error.js';
export { FlowCycleError } from './errors/flow-cycle.error.js';
export { WrongBackendError } from './errors/wrong-backend.error.js';
export { EnqueueIncompleteError } from './errors/enqueue-incomplete.error.js';
export { UnconfirmedEnqueueError } from './errors/unconfirmed-enqueue.error.js';
export { PayloadSerializationError } from './errors/payload-serialization.error.js';
export { TaskResultNotFoundError } from './errors/task-result-not-found.error.js';
export { RunFailedError } from './errors/run-failed.error.js';
export { WaitTimeoutError } from './errors/wait-timeout.error.js';
export { InvalidWaitError } from './errors/invalid-wait.error.js';
export { InvalidRetryAfterError, RetryAfter } from './task/retry-after.js';
export { AcknowledgementTimeoutError } from './errors/acknowledgement-timeout.error.js';
export { LeaseLostError } from './errors/lease-lost.error.js';
export { CancelledError } from './errors/cancelled.error.js';
export type { CancelOutcome } from './queue/cancel-run.js';
export { TaskTimeoutError } from './errors/task-timeout.error.js';
export { InvalidProgressError } from './errors/invalid-progress.error.js';
export { ShutdownTimeoutError } from './errors/shutdown-timeout.error.js';
export { NonRetryableError } from './errors/non-retryable.error.js';
export { InvalidRunStateError } from './errors/invalid-run-state.error.js';
export { InvalidInspectionError } from './errors/invalid-inspection.error.js';
export { RedisUnavailableError } from './errors/redis-unavailable.error.js';
export { RedisOutOfMemoryError } from './errors/redis-out-of-memory.error.js';
export { UnsafeRedisError } from './errors/unsafe-redis.error.js';
export { StorageLayoutError } from './errors/storage-layout.error.js';
export { PartitionedLimitError } from './errors/partitioned-limit.error.js';
export type { PartitionView } from './backend/partitioned/partition-record.js';
