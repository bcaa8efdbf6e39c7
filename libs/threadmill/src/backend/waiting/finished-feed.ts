import type { ReportedEntry, StoredRun } from '../../records/backend-records.js';

/**
 * What registering runs for waiting found (`TaskBackend.watch`): where
 * the feed of finished runs stood, and each run's state.
 */
export interface WatchReply {
  /** The id of the feed's last entry: read after it for the runs that were pending. */
  readonly lastId: string;
  /**
   * Per id, in order: the stored fields of a settled run (SUCCESSFUL, FAILED,
   * QUARANTINED or CANCELLED), `'missing'` when no run has the id, null while pending.
   */
  readonly states: readonly (StoredRun | 'missing' | null)[];
}

/**
 * One entry of the feed of finished runs: a registered run that settled, or
 * one that is gone, or what a running attempt of a registered run reported.
 */
export type FinishedEntry =
  | { readonly id: string; readonly fields: StoredRun }
  | { readonly id: string; readonly removed: 'dequeued' | 'purged' }
  /** Progress or log lines a running attempt of a registered run reported: it is still pending. */
  | { readonly id: string; readonly reported: ReportedEntry };

/**
 * The feed of registered runs that settled or were removed, read in order
 * by one blocked read at a time on a connection of its own (a blocked
 * command holds its connection): one per waiting process, whatever the
 * number of waiters.
 */
export interface FinishedFeed {
  /**
   * Waits up to `timeoutMs` for entries after `afterId`; resolves with them
   * and the id of the last one (`afterId` again, with none, on timeout).
   * Rejects when the read fails or goes unanswered; the next read may follow
   * at once (it waits for the connection).
   */
  read(afterId: string, timeoutMs: number): Promise<{ readonly lastId: string; readonly entries: FinishedEntry[] }>;
  /** Ends a read under way (it resolves with no entries) and closes the connection. */
  close(): void;
}

/** What a waiter needs of a backend of one keyspace: registrations and the feed they publish to. */
export interface WatchedStore {
  watch(ids: readonly string[], expiryMs: number): Promise<WatchReply>;
  /**
   * The feed of registered runs that settled or were removed, on its own
   * connection.
   * @param onReady called each time its connection is established, the
   *   first time included (Redis may have restarted without registrations
   *   made meanwhile: register again)
   */
  finishedFeed(onReady: () => void): FinishedFeed;
}
