import { parseFragment } from '../../codec/json-fragment.js';
import { withLease } from '../../backend/redis/lease-value.js';
import type { LeasedRun, StoredRun } from '../../backend/task-backend.js';
import type { TaskError } from '../../records/task-result.js';
import type { StartFlag } from '../../rules/lease-rules.js';
import { settled } from '../../rules/run-rules.js';

/** A run's current lease, the fields the Redis backend keeps in its leases hash. */
export interface MemoryLease {
  readonly token: string;
  readonly claimedAt: number;
  readonly attempt: number;
  readonly recoveries: number;
  /** Its started flag (see `StartFlag`). */
  started: StartFlag;
  /** The holder's worker id, JSON-encoded (as the Redis backend stores it). */
  readonly worker: string;
  deadline: number;
}

/**
 * One stored run: `fields` are what the Redis backend keeps in the run's
 * hash (payload, queue, score, enqueuedAt, then status, attempts, workers,
 * errors, result, ... as attempts settle), under the same names and in the
 * same text form, so that the results built from them are the same.
 */
export class MemoryRun {
  lease: MemoryLease | undefined;

  constructor(
    readonly id: string,
    readonly queue: string,
    readonly fields: Record<string, string>,
  ) {}

  get score(): number {
    return Number(this.fields['score']);
  }

  get status(): string {
    return this.lease ? 'RUNNING' : (this.fields['status'] ?? 'READY');
  }

  /** Settled for good: nothing more will happen to it unless an operator requeues it. */
  get settled(): boolean {
    return settled(this.status);
  }

  /** The fields a reader sees: the stored ones with the lease overlaid, as `RedisTaskBackend.load` returns them. */
  stored(): StoredRun {
    const lease = this.lease;
    if (!lease) return { ...this.fields };
    const value = `${lease.token}|${lease.claimedAt}|${lease.attempt}|${lease.recoveries}|${lease.started}|${lease.worker}`;
    return withLease({ ...this.fields }, value);
  }

  /** The run as a claim hands it to a worker, under its current lease. */
  leased(): LeasedRun {
    const lease = this.lease!;
    const previous = lease.attempt > 1 ? parseFragment<string>(this.fields['workers']) : [];
    return {
      id: this.id,
      queue: this.queue,
      token: lease.token,
      deadline: lease.deadline,
      payload: this.fields['payload']!,
      attempts: lease.attempt,
      workerIds: [...previous, JSON.parse(lease.worker) as string],
      errors: parseFragment<TaskError>(this.fields['errors']),
      enqueuedAt: Number(this.fields['enqueuedAt']),
      startedAt: this.fields['startedAt'] ? Number(this.fields['startedAt']) : lease.claimedAt,
      claimedAt: lease.claimedAt,
      recoveries: lease.recoveries,
    };
  }
}

/** Appends an item to a JSON array body without brackets (see `parseFragment`). */
export function appendFragment(current: string | undefined, item: string): string {
  return current ? `${current},${item}` : item;
}
