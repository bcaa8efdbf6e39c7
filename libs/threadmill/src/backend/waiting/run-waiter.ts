import { Logger } from '@nestjs/common';
import type { ReportedEntry } from '../../records/backend-records.js';
import type { FinishedFeed, WatchedStore, WatchReply } from './finished-feed.js';
import { decodeJson } from '../../codec/json-codec.js';
import { InvalidWaitError } from '../../errors/invalid-wait.error.js';
import { WaitTimeoutError } from '../../errors/wait-timeout.error.js';
import { deliver, MISSING, release, type Outcome, type ReportListeners, type WaitCall } from './run-delivery.js';
import type { TaskResult } from '../../records/task-result.js';

export type { ReportListeners } from './run-delivery.js';

/** How long a registration lasts in Redis unless renewed. */
const REGISTRATION_MS = 5 * 60_000;
/** How often pending registrations are renewed (well within their expiry) and held results swept. */
const RENEW_EVERY_MS = 60_000;
/** How long the result of a waitable run nobody waited for yet is held for a `waitFor` still to come. */
const HOLD_MS = 5 * 60_000;
/** Most ids one registration call carries. */
const WATCH_BATCH = 500;
/** Longest blocked read: the reader stops after one once nothing is pending. */
const READ_BLOCK_MS = 10_000;

/** This process's interest in one run id. */
interface Registration {
  readonly waiters: Set<WaitCall>;
  /** Enqueued `waitable`: kept, and its outcome held, for a `waitFor` still to come. */
  keep: boolean;
  /** Its waitable enqueue is storing it: that no run has the id yet is expected. */
  storing: boolean;
  /** How it ended while nobody waited (waitable runs only), and when. */
  outcome?: Outcome;
  heldSince?: number;
}

/**
 * Resolves `TaskQueue.waitFor` calls without polling, for the whole process:
 * it registers the runs waited on (`TaskBackend.watch`, which tells where
 * each one is in the same step) and reads the feed of those that settle or
 * are removed with one blocked read at a time on one connection, however
 * many callers wait. Registrations a tick collects go out as one call.
 *
 * Registrations live in Redis for minutes and are renewed while a waiter
 * waits; they are renewed at once whenever the feed's connection is
 * established or a read fails (Redis may have restarted without them), and
 * the runs that settled meanwhile are then resolved from their records, or
 * from the feed, which the reader goes on reading from where it stopped.
 */
export class RunWaiter {
  private readonly logger = new Logger('Threadmill');
  private readonly registrations = new Map<string, Registration>();
  /**
   * Runs a registration found missing, with the feed position it found them
   * at: the verdict waits until the reader is past it, since a run settled
   * (and deleted, resultTtl 0) while the reader was away is in the feed.
   */
  private readonly missing = new Map<string, string>();
  private batch: { readonly ids: string[]; readonly done: Promise<void> } | undefined;
  private feed: FinishedFeed | undefined;
  /** The id of the last feed entry read. */
  private position = '0-0';
  private reading = false;
  private closed = false;
  private renewal: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private renewAgain = false;
  private readonly pauses = new Set<() => void>();

  constructor(private readonly backend: WatchedStore) {}

  /** Resolves with run `id`'s result once it settles; see `TaskQueue.waitFor`. */
  wait<R>(
    id: string,
    timeoutMs: number | undefined,
    signal?: AbortSignal,
    listeners?: ReportListeners,
  ): Promise<TaskResult<R>> {
    if (this.closed) return Promise.reject(new InvalidWaitError(id, 'the application is shutting down.'));
    return new Promise<TaskResult<R>>((resolve, reject) => {
      const waiter: WaitCall = { resolve: resolve as (result: TaskResult) => void, reject, listeners };
      let registration = this.registrations.get(id);
      if (registration?.outcome) {
        this.registrations.delete(id);
        deliver(id, registration.outcome, [waiter]);
        return;
      }
      if (!registration) {
        registration = this.add(id, false);
        this.enlist([id]).catch((error: unknown) => this.fail(id, error));
      }
      registration.waiters.add(waiter);
      if (timeoutMs !== undefined) {
        waiter.timer = setTimeout(() => this.giveUp(id, waiter, new WaitTimeoutError(id, timeoutMs)), timeoutMs);
      }
      if (signal) {
        const abort = (): void => this.giveUp(id, waiter, signal.reason as Error);
        signal.addEventListener('abort', abort, { once: true });
        waiter.unlisten = () => signal.removeEventListener('abort', abort);
      }
    });
  }

  /**
   * Registers runs a waitable enqueue is about to store, so that a later
   * `waitFor` gets their outcome even when they settle first (and nothing of
   * them is kept). Call {@link stored} or {@link forget} once the store ends.
   */
  async register(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      const registration = this.registrations.get(id) ?? this.add(id, true);
      registration.keep = true;
      registration.storing = true;
    }
    try {
      await this.enlist(ids);
    } catch (error) {
      this.forget(ids);
      throw error;
    }
  }

  /** The waitable runs `ids` are stored: from now on, finding no run with one of their ids means it is gone. */
  stored(ids: readonly string[]): void {
    for (const id of ids) {
      const registration = this.registrations.get(id);
      if (registration) registration.storing = false;
    }
  }

  /** Drops the registrations of a waitable enqueue that stored nothing. */
  forget(ids: readonly string[]): void {
    for (const id of ids) {
      const registration = this.registrations.get(id);
      if (!registration) continue;
      registration.keep = false;
      registration.storing = false;
      if (registration.waiters.size === 0) this.drop(id);
    }
  }

  /** Stops reading and renewing, closes the feed, and rejects the waits still pending. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.renewal);
    for (const wake of this.pauses) wake();
    this.feed?.close();
    for (const [id, registration] of this.registrations) {
      for (const waiter of registration.waiters) {
        release(waiter);
        waiter.reject(
          new InvalidWaitError(id, 'the application shut down while waitFor waited; the run itself is unaffected.'),
        );
      }
    }
    this.registrations.clear();
    this.missing.clear();
  }

  private add(id: string, keep: boolean): Registration {
    const registration: Registration = { waiters: new Set(), keep, storing: false };
    this.registrations.set(id, registration);
    this.renewal ??= setInterval(() => this.sweep(), RENEW_EVERY_MS).unref();
    return registration;
  }

  private drop(id: string): void {
    this.registrations.delete(id);
    this.missing.delete(id);
  }

  /** Registers `ids` with the others of this tick, in one call. */
  private enlist(ids: readonly string[]): Promise<void> {
    if (!this.batch) {
      const collected: string[] = [];
      const done = new Promise<void>((resolve) => process.nextTick(resolve)).then(() => {
        this.batch = undefined;
        return this.watch(collected);
      });
      this.batch = { ids: collected, done };
    }
    for (const id of ids) this.batch.ids.push(id);
    return this.batch.done;
  }

  private async watch(ids: readonly string[]): Promise<void> {
    const calls: Promise<void>[] = [];
    for (let first = 0; first < ids.length; first += WATCH_BATCH) {
      const chunk = ids.slice(first, first + WATCH_BATCH);
      // Taken as the call goes out: a store that ends before its reply is
      // read may have run after it in Redis.
      const storing = chunk.map((id) => this.registrations.get(id)?.storing === true);
      calls.push(this.backend.watch(chunk, REGISTRATION_MS).then((reply) => this.apply(chunk, storing, reply)));
    }
    await Promise.all(calls);
  }

  /**
   * Resolves what a registration found settled or missing, and starts the
   * reader for the rest. `storing[i]`: the run was being stored as the call
   * went out, so finding no run says nothing.
   */
  private apply(ids: readonly string[], storing: readonly boolean[], { lastId, states }: WatchReply): void {
    if (this.closed) return;
    states.forEach((state, i) => {
      const id = ids[i]!;
      const registration = this.registrations.get(id);
      if (!registration || registration.outcome || state === null) return;
      if (state !== 'missing') this.settle(id, { fields: state });
      else if (!storing[i]) this.markMissing(id, lastId);
    });
    if (!this.reading && this.pending()) {
      // Every run pending at this registration is published after `lastId`.
      this.position = lastId;
      this.reading = true;
      this.feed ??= this.backend.finishedFeed(() => void this.renew());
      void this.read(this.feed);
    }
  }

  private markMissing(id: string, at: string): void {
    // Without a reader, no entry of this process's is unread.
    if (!this.reading || compareEntryIds(this.position, at) >= 0) this.settle(id, MISSING);
    else this.missing.set(id, at);
  }

  /** The reader: one blocked read at a time, from where the last one stopped, while anything is pending. */
  private async read(feed: FinishedFeed): Promise<void> {
    let failures = 0;
    while (!this.closed && this.pending()) {
      try {
        const { lastId, entries } = await feed.read(this.position, READ_BLOCK_MS);
        failures = 0;
        this.position = lastId;
        for (const entry of entries) {
          if ('reported' in entry) this.tell(entry.id, entry.reported);
          else this.settle(entry.id, 'removed' in entry ? { removed: entry.removed } : { fields: entry.fields });
        }
        for (const [id, at] of this.missing) if (compareEntryIds(lastId, at) >= 0) this.settle(id, MISSING);
      } catch (error) {
        if (this.closed) break;
        if (++failures === 1) this.warn('Reading finished runs failed', error);
        await this.pause(backoff(failures));
        // Whatever broke may have cost registrations: make them again before reading on.
        await this.renew();
      }
    }
    this.reading = false;
  }

  private settle(id: string, outcome: Outcome): void {
    const registration = this.registrations.get(id);
    if (!registration) return;
    this.missing.delete(id);
    if (registration.waiters.size === 0) {
      if (!registration.keep) return this.drop(id);
      registration.outcome = outcome;
      registration.heldSince = Date.now();
      return;
    }
    this.registrations.delete(id);
    deliver(id, outcome, registration.waiters);
  }

  /** Tells the run's waiters what its running attempt reported; the run is still pending. */
  private tell(id: string, reported: ReportedEntry): void {
    const registration = this.registrations.get(id);
    if (!registration) return;
    let progress: unknown;
    try {
      if (reported.progress !== undefined) progress = decodeJson(reported.progress);
    } catch {
      return;
    }
    for (const { listeners } of registration.waiters) {
      if (!listeners) continue;
      try {
        if (reported.progress !== undefined) listeners.onProgress?.(progress);
        if (listeners.onLog) for (const line of reported.lines) listeners.onLog(line);
      } catch (error) {
        this.logger.warn(`A waitFor listener of run ${id} threw (${(error as Error).message}); it is ignored.`);
      }
    }
  }

  /** One waiter stops waiting (its timeout or its signal): the run is untouched. */
  private giveUp(id: string, waiter: WaitCall, reason: Error): void {
    const registration = this.registrations.get(id);
    if (registration?.waiters.delete(waiter) && registration.waiters.size === 0 && !registration.keep) this.drop(id);
    release(waiter);
    waiter.reject(reason);
  }

  /** A registration failed (Redis unavailable): its waiters get the error. */
  private fail(id: string, error: unknown): void {
    const registration = this.registrations.get(id);
    if (!registration || registration.outcome) return;
    for (const waiter of registration.waiters) {
      release(waiter);
      waiter.reject(error instanceof Error ? error : new Error(String(error)));
    }
    registration.waiters.clear();
    if (!registration.keep) this.drop(id);
  }

  /** Runs of the periodic timer: drops held outcomes nobody came for, and renews the registrations. */
  private sweep(): void {
    const expired = Date.now() - HOLD_MS;
    for (const [id, registration] of this.registrations) {
      if (registration.outcome && registration.heldSince! < expired) this.drop(id);
    }
    if (this.registrations.size === 0) {
      clearInterval(this.renewal);
      this.renewal = undefined;
      return;
    }
    void this.renew();
  }

  /** Registers every pending run again, until it succeeds; one renewal at a time, again if asked meanwhile. */
  private renew(): Promise<void> {
    this.renewAgain = true;
    this.renewing ??= this.renewWhileAsked().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewWhileAsked(): Promise<void> {
    let failures = 0;
    while (this.renewAgain && !this.closed) {
      this.renewAgain = false;
      const ids: string[] = [];
      for (const [id, registration] of this.registrations) if (!registration.outcome) ids.push(id);
      try {
        await this.watch(ids);
        failures = 0;
      } catch (error) {
        if (this.closed) return;
        if (++failures === 1) this.warn('Registering the waited runs again failed', error);
        this.renewAgain = true;
        await this.pause(backoff(failures));
      }
    }
  }

  private pending(): boolean {
    for (const registration of this.registrations.values()) if (!registration.outcome) return true;
    return false;
  }

  /** Sleeps `ms`, or until {@link close}. */
  private pause(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.pauses.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.pauses.add(wake);
    });
  }

  private warn(what: string, error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.logger.warn(`${what} (${message}); waitFor retries until Redis answers.`);
  }
}

/** Orders two stream entry ids (`<ms>-<seq>`). */
function compareEntryIds(a: string, b: string): number {
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  return (
    Number(a.slice(0, dashA)) - Number(b.slice(0, dashB)) || Number(a.slice(dashA + 1)) - Number(b.slice(dashB + 1))
  );
}

/** Pause before the `failures`th retry: 100 ms, doubling, at most a second. */
function backoff(failures: number): number {
  return Math.min(100 * 2 ** (failures - 1), 1_000);
}
