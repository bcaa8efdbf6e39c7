import type { TaskBackend } from './task-backend.js';

/*
 * The roles of a backend, one per kind of caller. Every backend implements
 * all of them (`TaskBackend` is their union, and the conformance suites
 * hold each backend to it); a caller depends on its role only, so what it
 * may do to storage reads off its constructor, and a new backend knows which
 * part of the contract each caller exercises.
 */

/** What producers use (`TaskQueue` and its parts): storing runs, reading them, cancelling, waiting. */
export type ProducerStore = Pick<
  TaskBackend,
  'newRunId' | 'newRunIdBeside' | 'store' | 'load' | 'loadMany' | 'counts' | 'cancel' | 'createWaiter' | 'flows'
>;

/** What a consumer uses (the worker's claimer, lease keeper, acknowledger and consumer): the life of a lease. */
export type LeaseStore = Pick<
  TaskBackend,
  | 'claim'
  | 'claimWaiter'
  | 'acknowledge'
  | 'announceStart'
  | 'report'
  | 'release'
  | 'defer'
  | 'renew'
  | 'retire'
  | 'counts'
>;

/** What a broker uses: due runs promoted, expired leases reaped and settled, results trimmed. */
export type BrokerSteps = Pick<TaskBackend, 'promote' | 'reap' | 'trim' | 'acknowledge' | 'brokerSignal'>;

/** What an attempt's reports use (`TaskContext.progress`, `log`), and what it reads of its flow (`TaskContext.dependencies`). */
export type ReportStore = Pick<TaskBackend, 'report' | 'flows'>;

/** What operators use (`TaskInspector`, the dashboard, the CLI): reading every segment, and acting on queues. */
export type AdminStore = Pick<
  TaskBackend,
  | 'clockOffsetMs'
  | 'cancel'
  | 'concurrencyCaps'
  | 'counts'
  | 'dequeue'
  | 'flows'
  | 'knownQueues'
  | 'leases'
  | 'list'
  | 'load'
  | 'loadMany'
  | 'memory'
  | 'metrics'
  | 'partitionView'
  | 'pause'
  | 'pausedSince'
  | 'ping'
  | 'purge'
  | 'rateLimits'
  | 'readySince'
  | 'requeue'
  | 'requeueAll'
  | 'resume'
  | 'schedules'
  | 'setConcurrencyCap'
  | 'setRateLimit'
  | 'setTaskLimit'
  | 'stats'
  | 'taskLimits'
  | 'workers'
>;
