import type { MinuteMetrics, RequeueableSegment, Segment } from '../backend/task-backend.js';
import type { CapacityReport } from '../capacity/capacity-report.js';
import type { FlowView } from '../inspector/flow-view.js';
import type { QueueOverview, WorkerInfo } from '../inspector/inspector.types.js';
import type { TaskResult } from '../records/task-result.js';
import type { ScheduleInfo } from '../records/schedule-options.interface.js';

/** `GET <path>/api/overview`: every queue at a glance. */
export interface DashboardOverview {
  /** The backend's alias (its keyspace). */
  readonly alias: string;
  readonly title: string;
  /** Whether requeue, dequeue, cancel, purge, pause and resume are disabled. */
  readonly readOnly: boolean;
  /** The window of the rates, in minutes. */
  readonly windowMinutes: number;
  /** The server's clock, epoch ms, so the page can show ages and lease deadlines without clock skew. */
  readonly now: number;
  readonly queues: readonly QueueOverview[];
  /**
   * Redis's memory, its limit and the memory projected for kept results, with
   * the capacity warning when a figure reached `memoryWarningRatio`; null when
   * Redis's memory could not be read (`INFO` refused).
   */
  readonly capacity: CapacityReport | null;
}

/** `GET <path>/api/queues/:queue/metrics`: a queue's activity per minute, oldest first. */
export interface DashboardMetrics {
  readonly queue: string;
  readonly now: number;
  readonly minutes: readonly MinuteMetrics[];
}

/** `GET <path>/api/queues/:queue/runs`: a page of one segment of a queue. */
export interface DashboardRunPage {
  readonly queue: string;
  readonly segment: Segment;
  readonly offset: number;
  readonly limit: number;
  /** Runs in the segment now, for paging. */
  readonly total: number;
  readonly now: number;
  readonly runs: readonly TaskResult[];
}

/**
 * `GET <path>/api/flows/:id` (or `api/flows?id=`): a flow with its nodes'
 * live statuses, every node after its dependencies (`TaskInspector.flow`);
 * dates as ISO strings. 404 when no flow has the id (or it expired).
 */
export type DashboardFlow = FlowView;

/** `GET <path>/api/workers`: live worker processes and their leases. */
export interface DashboardWorkers {
  readonly now: number;
  readonly workers: readonly WorkerInfo[];
}

/** `GET <path>/api/schedules`: every schedule with its next and last run. */
export interface DashboardSchedules {
  readonly now: number;
  readonly schedules: readonly ScheduleInfo[];
}

/** `POST <path>/api/runs/:id/dequeue`. */
export interface DashboardDequeued {
  readonly id: string;
  readonly dequeued: true;
}

/** `POST <path>/api/queues/:queue/purge`. */
export interface DashboardPurged {
  readonly queue: string;
  /** Runs removed, in every segment. */
  readonly removed: number;
}

/** `POST <path>/api/queues/:queue/requeue-all` with `{ "segment": "failed" | "quarantined" | "cancelled" }`. */
export interface DashboardRequeuedAll {
  readonly queue: string;
  readonly segment: RequeueableSegment;
  /** Runs requeued: those the segment held when the requeue began. */
  readonly requeued: number;
}

/** `POST <path>/api/queues/:queue/pause` and `.../resume`: the queue's state after the action. */
export type { PauseState as DashboardPauseState } from '../inspector/inspector.types.js';
