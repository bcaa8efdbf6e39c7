import { TaskResultNotFoundError } from '../../errors/task-result-not-found.error.js';
import type { StoredRun } from '../../records/backend-records.js';
import type { TaskResult } from '../../records/task-result.js';
import type { WatchedStore } from '../waiting/finished-feed.js';
import { RunWaiter, type ReportListeners } from '../waiting/run-waiter.js';
import type { Waiter } from '../waiting/waiter.js';
import { groupByPartition } from './partition-groups.js';

/** What the waiter of a partitioned backend asks of it. */
export interface PartitionedWaiting {
  partitionOfRun(id: string): number;
  /** Partition `p`'s backend, which has a feed of its own. */
  part(p: number): WatchedStore;
  loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]>;
}

/**
 * `waitFor` on a partitioned backend: each partition has its own feed of
 * finished runs (its scripts publish to a stream of its own slot), so each
 * has its own {@link RunWaiter}, created with the first wait there, and a
 * run is waited for in the partition its id routes to.
 */
export class PartitionedRunWaiter implements Waiter {
  private readonly waiters: RunWaiter[] = [];

  constructor(private readonly backend: PartitionedWaiting) {}

  /**
   * Waits in the run's partition. A run not found there may have been
   * stored before the partition count changed: it is looked for in the
   * others, and waited for where it is.
   */
  async wait<R>(
    id: string,
    timeoutMs: number | undefined,
    signal?: AbortSignal,
    listeners?: ReportListeners,
  ): Promise<TaskResult<R>> {
    const routed = this.backend.partitionOfRun(id);
    const startedAt = Date.now();
    try {
      return await this.of(routed).wait<R>(id, timeoutMs, signal, listeners);
    } catch (error) {
      if (!(error instanceof TaskResultNotFoundError)) throw error;
      const [fields] = await this.backend.loadMany([id]);
      const found = this.backend.partitionOfRun(id);
      if (fields === null || found === routed) throw error;
      const left = timeoutMs === undefined ? undefined : Math.max(1, timeoutMs - (Date.now() - startedAt));
      return this.of(found).wait<R>(id, left, signal, listeners);
    }
  }

  async register(ids: readonly string[]): Promise<void> {
    await Promise.all(this.split(ids).map(([p, group]) => this.of(p).register(group)));
  }

  stored(ids: readonly string[]): void {
    for (const [p, group] of this.split(ids)) this.of(p).stored(group);
  }

  forget(ids: readonly string[]): void {
    for (const [p, group] of this.split(ids)) this.of(p).forget(group);
  }

  close(): void {
    for (const waiter of this.waiters) waiter?.close();
  }

  private of(p: number): RunWaiter {
    return (this.waiters[p] ??= new RunWaiter(this.backend.part(p)));
  }

  private split(ids: readonly string[]): [number, string[]][] {
    return [...groupByPartition(ids, (id) => this.backend.partitionOfRun(id))].map(([p, group]) => [p, group.items]);
  }
}
