import type { FinishedEntry, FinishedFeed, ReportedEntry, StoredRun } from '../task-backend.js';
import type { RedisClient } from './redis-client.js';
import type { RedisConnections } from './redis-connections.js';

/**
 * How long past its own timeout a blocked read may go unanswered before the
 * feed gives up on its connection: a read queued on a connection that is
 * reconnecting (or black-holed) may never be answered at all.
 */
const UNANSWERED_GRACE_MS = 5_000;
/** Most entries one read returns: a backlog after an outage comes in several reads. */
const READ_COUNT = 500;

type ReadReply = [key: string, entries: [id: string, fields: string[]][]][] | null;

/** A run's fields from HGETALL-style pairs, from position `from` of `flat` on. */
export function storedFields(flat: readonly string[], from = 0): StoredRun {
  const fields: Record<string, string> = {};
  for (let i = from; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  return fields;
}

/**
 * Reads the `finished` stream (see `lua/includes/finished.lua`) with XREAD
 * BLOCK on a connection of its own, named `…:finished` for operators. A
 * read in flight when the connection drops is resent by ioredis when it is
 * back (the position is in the read, so nothing is skipped). Each time the
 * connection is established, the first time included, that is reported:
 * Redis may have restarted without the registrations it had, even before
 * the first connection (registrations go over the command connection).
 */
export class RedisFinishedFeed implements FinishedFeed {
  private connection: RedisClient;
  private closed = false;
  /**
   * Ends the read under way: one per read, never one promise for the feed's
   * life, which each race would leave a reaction on (see `RedisWorkSignal`).
   */
  private endRead: ((value: null) => void) | undefined;

  constructor(
    private readonly connections: RedisConnections,
    private readonly key: string,
    private readonly onReady: () => void,
  ) {
    this.connection = this.open();
  }

  async read(afterId: string, timeoutMs: number): Promise<{ lastId: string; entries: FinishedEntry[] }> {
    const none = { lastId: afterId, entries: [] };
    if (this.closed) return none;
    const { connection } = this;
    const reply = connection.xread(
      'COUNT',
      READ_COUNT,
      'BLOCK',
      Math.max(1, Math.round(timeoutMs)),
      'STREAMS',
      this.key,
      afterId,
    ) as Promise<ReadReply>;
    // The race below may settle without it: a late failure must not go unhandled.
    reply.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<'unanswered'>((resolve) => {
      timer = setTimeout(() => resolve('unanswered'), timeoutMs + UNANSWERED_GRACE_MS);
    });
    const closing = new Promise<null>((resolve) => (this.endRead = resolve));
    try {
      const got = await Promise.race([reply, closing, unanswered]);
      if (got === 'unanswered') {
        // A new connection for the next read; this one may never answer.
        connection.disconnect();
        if (!this.closed && connection === this.connection) this.connection = this.open();
        throw new Error(`the read of ${this.key} went unanswered for ${timeoutMs + UNANSWERED_GRACE_MS} ms`);
      }
      return got ? entriesOf(got, afterId) : none;
    } catch (error) {
      if (this.closed) return none;
      throw error;
    } finally {
      clearTimeout(timer);
      this.endRead = undefined;
    }
  }

  close(): void {
    this.closed = true;
    this.endRead?.(null);
    this.connection.disconnect();
  }

  private open(): RedisClient {
    const connection = this.connections.openBlocking('finished');
    // One listener per connection, whatever the number of waiters.
    connection.on('ready', () => {
      if (!this.closed) this.onReady();
    });
    return connection;
  }
}

/** The entries of an XREAD reply of one stream, and the id of its last entry. */
function entriesOf(reply: NonNullable<ReadReply>, afterId: string): { lastId: string; entries: FinishedEntry[] } {
  const entries: FinishedEntry[] = [];
  let lastId = afterId;
  for (const [entryId, flat] of reply[0]?.[1] ?? []) {
    lastId = entryId;
    if (flat[0] !== 'id' || flat[1] === undefined) continue;
    if (flat[2] === 'removed') entries.push({ id: flat[1], removed: flat[3] as 'dequeued' | 'purged' });
    else if (flat[2] === 'reported') entries.push({ id: flat[1], reported: reportedEntry(storedFields(flat, 4)) });
    else entries.push({ id: flat[1], fields: storedFields(flat, 2) });
  }
  return { lastId, entries };
}

/** A `reported` entry's fields (see `lua/report.lua`): the progress JSON, and the new lines joined by newlines. */
function reportedEntry(fields: StoredRun): ReportedEntry {
  const logs = fields['logs'];
  const lines = logs === undefined ? [] : logs.split('\n');
  return fields['progress'] === undefined ? { lines } : { progress: fields['progress'], lines };
}
