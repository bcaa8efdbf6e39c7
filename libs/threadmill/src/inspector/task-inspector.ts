import { Inject, Injectable } from '@nestjs/common';
import { TaskBackend, type QueueCounts, type Segment } from '../backend/task-backend.js';
import { InvalidEnqueueError } from '../errors/invalid-enqueue.error.js';
import { TaskResultNotFoundError } from '../errors/task-result-not-found.error.js';
import type { ThreadmillOptions } from '../module/threadmill-options.interface.js';
import type { TaskResult } from '../queue/task-result.js';
import { taskResultFromStored } from '../queue/task-result.factory.js';
import { THREADMILL_OPTIONS } from '../threadmill.constants.js';

/** A page of a segment listing. */
export interface ListOptions {
  /** @defaultValue `0` */
  offset?: number;
  /** @defaultValue `100` */
  limit?: number;
}

const SEGMENTS: readonly Segment[] = ['ready', 'deferred', 'running', 'successful', 'failed', 'quarantined'];

/**
 * Looks into the queues and acts on runs: listing segments, and requeueing
 * failed or quarantined runs after a fix. Inject it where operators need it
 * (an admin controller, a CLI); it never slows the hot path.
 */
@Injectable()
export class TaskInspector {
  constructor(
    private readonly backend: TaskBackend,
    @Inject(THREADMILL_OPTIONS) private readonly options: ThreadmillOptions,
  ) {}

  /** Runs per segment of each queue. */
  counts(queues: readonly string[] = this.options.queues): Promise<QueueCounts[]> {
    return this.backend.counts(queues);
  }

  /**
   * The runs of one segment of a queue, a page at a time: ready runs in the
   * order they will run, deferred by due time, running by lease deadline,
   * finished and quarantined runs newest first.
   */
  async list(queue: string, segment: Segment, { offset = 0, limit = 100 }: ListOptions = {}): Promise<TaskResult[]> {
    this.check(queue);
    if (!SEGMENTS.includes(segment)) {
      throw new InvalidEnqueueError('list', `segment must be one of ${SEGMENTS.join(', ')}, got "${String(segment)}".`);
    }
    const ids = await this.backend.list(queue, segment, offset, limit);
    const records = await this.backend.loadMany(ids);
    // A finished run may expire between the two reads: skip it.
    return records.flatMap((fields, i) => (fields ? [taskResultFromStored(ids[i]!, fields)] : []));
  }

  /** Quarantined runs of a queue, newest first. */
  quarantined(queue: string, page?: ListOptions): Promise<TaskResult[]> {
    return this.list(queue, 'quarantined', page);
  }

  /**
   * Sends a FAILED or QUARANTINED run back to READY, keeping its id, attempt
   * count and error history, at its original place in its queue.
   * @returns the run as stored just after the requeue (a worker may already have claimed it)
   * @throws TaskResultNotFoundError for an unknown id
   * @throws InvalidEnqueueError when the run is neither FAILED nor QUARANTINED
   */
  async requeue(id: string): Promise<TaskResult> {
    const fields = await this.backend.load(id);
    if (!fields) throw new TaskResultNotFoundError(id);
    const { requeued, status } = await this.backend.requeue(id, fields['queue']!);
    if (!requeued) {
      if (status === '') throw new TaskResultNotFoundError(id);
      throw new InvalidEnqueueError(id, `run ${id} is ${status}; only FAILED or QUARANTINED runs can be requeued.`);
    }
    return taskResultFromStored(id, (await this.backend.load(id))!);
  }

  private check(queue: string): void {
    if (!this.options.queues.includes(queue)) {
      throw new InvalidEnqueueError(
        'list',
        `queue "${queue}" is not one of the module's queues (${this.options.queues.join(', ')}).`,
      );
    }
  }
}
