import type { StoredRun } from '../task-backend.js';

/**
 * A run's current lease as the leases hash stores it:
 * `token|claimedAt|attempt|recoveries|started|worker` (see `lua/includes/lease.lua`).
 * Claims write only this, never the run hash, so a reader overlays the lease
 * on the run's stored fields, which record settled attempts only.
 */
export interface LeaseValue {
  readonly token: string;
  readonly claimedAt: number;
  readonly attempt: number;
  readonly recoveries: number;
  /** Whether the holder recorded that the attempt started (an expiry then charges it); an announced start is not. */
  readonly started: boolean;
  /** The holder's worker id, JSON-encoded (a worker ids fragment of one). */
  readonly worker: string;
}

export function parseLeaseValue(value: string): LeaseValue {
  const parts = value.split('|');
  return {
    token: parts[0]!,
    claimedAt: Number(parts[1]),
    attempt: Number(parts[2]),
    recoveries: Number(parts[3]),
    started: parts[4] === '1' || parts[4] === '2',
    // A worker id never holds '|', but JSON may: keep whatever follows.
    worker: parts.slice(5).join('|'),
  };
}

/**
 * The fields of a run as readers expect them: while leased, the run is
 * RUNNING in its current attempt, by its holder, since the lease began.
 */
export function withLease(fields: StoredRun, value: string | null): StoredRun {
  if (value === null) return fields;
  const lease = parseLeaseValue(value);
  const previous = fields['workers'];
  return {
    ...fields,
    status: 'RUNNING',
    attempts: String(lease.attempt),
    workers: previous && lease.attempt > 1 ? `${previous},${lease.worker}` : lease.worker,
    lastAttemptedAt: String(lease.claimedAt),
    startedAt: fields['startedAt'] ?? String(lease.claimedAt),
  };
}
