import type { RedisKeys } from '../redis-keys.js';

/** Indexes the distinct queues of a batch: scripts take their keys once per queue. */
export function indexQueues(items: readonly { queue: string }[]): { queues: string[]; index: Map<string, number> } {
  const index = new Map<string, number>();
  // A batch mostly holds runs of one queue in a row: skip the lookup for a repeat.
  let previous: string | undefined;
  for (const { queue } of items) {
    if (queue === previous) continue;
    previous = queue;
    if (!index.has(queue)) index.set(queue, index.size + 1);
  }
  return { queues: [...index.keys()], index };
}

/**
 * The KEYS of each script call, in the order the script's header lists them
 * (see `lua/`). Every key a script touches is declared, or derived in Lua
 * from a declared prefix that shares its hash tag, so each call is
 * single-slot in Redis Cluster.
 */
export class ScriptKeys {
  constructor(private readonly keys: RedisKeys) {}

  /** `callRecord`: the call's record slot (see `lua/includes/call-record.lua`). */
  enqueue(queues: readonly string[], callRecord: string, dedupeKeys: readonly string[] = []): string[] {
    const k = this.keys;
    const keys = [k.seq, k.brokerWake, k.runPrefix, k.fresh, callRecord];
    for (const q of queues) {
      keys.push(k.ready(q), k.deferred(q), k.wake(q), k.stats(q), k.metrics(q), k.readyList(q), k.grouped(q));
    }
    keys.push(k.done, k.queues);
    // Only a call holding dedupe items reads leases and its keys.
    if (dedupeKeys.length > 0) keys.push(k.leases, ...dedupeKeys);
    return keys;
  }

  /** `callRecord`: the call's record slot (see `lua/includes/call-record.lua`). */
  claim(queues: readonly string[], callRecord: string): string[] {
    const k = this.keys;
    // One prefix a queue: the script derives the queue's keys from it, and a
    // claim of many queues pays per key passed (docs/storage.md, "Queues without ready runs").
    return [
      k.runPrefix,
      k.brokerWake,
      k.leases,
      k.fresh,
      callRecord,
      k.taskLimits,
      ...queues.map((q) => k.queueKeys(q)),
    ];
  }

  /** `callRecord`: the call's record slot (see `lua/includes/call-record.lua`). */
  acknowledge(queues: readonly string[], callRecord: string): string[] {
    const k = this.keys;
    const keys = [k.runPrefix, k.brokerWake, k.leases, k.fresh];
    for (const q of queues) {
      keys.push(
        k.running(q),
        k.ready(q),
        k.deferred(q),
        k.wake(q),
        k.successful(q),
        k.failed(q),
        k.quarantined(q),
        k.stats(q),
        k.metrics(q),
        k.resultClasses(q),
      );
    }
    keys.push(callRecord, k.waiting, k.finished, k.done);
    // One prefix a queue: the script derives its limit groups' keys from it.
    for (const q of queues) keys.push(k.queueKeys(q));
    return keys;
  }

  watch(): string[] {
    const k = this.keys;
    return [k.waiting, k.finished, k.fresh, k.runPrefix, k.done];
  }

  renew(workerId: string, queues: readonly string[]): string[] {
    const k = this.keys;
    return [
      k.workers,
      k.worker(workerId),
      k.leases,
      ...queues.flatMap((q) => [k.running(q), k.paused(q)]),
      k.runPrefix,
    ];
  }

  /** `callRecord`: the call's record slot (see `lua/includes/call-record.lua`). */
  report(queues: readonly string[], callRecord: string): string[] {
    const k = this.keys;
    return [k.leases, k.fresh, k.runPrefix, k.waiting, k.finished, callRecord, ...queues.map((q) => k.running(q))];
  }

  start(queue: string): string[] {
    const k = this.keys;
    return [k.leases, k.running(queue)];
  }

  /** `callRecord`: the call's record slot (see `lua/includes/call-record.lua`). */
  defer(queues: readonly string[], callRecord: string): string[] {
    const k = this.keys;
    const keys = [k.leases, k.runPrefix, k.fresh, callRecord, k.brokerWake];
    for (const q of queues) keys.push(k.running(q), k.deferred(q), k.queueKeys(q));
    return keys;
  }

  release(queues: readonly string[], callRecord: string): string[] {
    const k = this.keys;
    const keys = [k.leases, k.runPrefix, k.fresh, callRecord];
    for (const q of queues) keys.push(k.running(q), k.ready(q), k.wake(q), k.queueKeys(q));
    return keys;
  }

  promote(queues: readonly string[]): string[] {
    const k = this.keys;
    const keys = [k.runPrefix, k.fresh];
    for (const q of queues) keys.push(k.deferred(q), k.ready(q), k.wake(q), k.readyList(q), k.paused(q));
    return keys;
  }

  pause(queue: string): string[] {
    const k = this.keys;
    return [k.paused(queue), k.wake(queue), k.queues];
  }

  cap(queue: string): string[] {
    const k = this.keys;
    return [k.cap(queue), k.wake(queue), k.ready(queue), k.readyList(queue), k.queues];
  }

  rate(queue: string): string[] {
    const k = this.keys;
    return [k.rate(queue), k.wake(queue), k.ready(queue), k.readyList(queue), k.queues];
  }

  wake(queues: readonly string[]): string[] {
    const k = this.keys;
    return queues.flatMap((q) => [k.wake(q), k.ready(q), k.readyList(q), k.groups(q)]);
  }

  taskLimit(): string[] {
    const k = this.keys;
    return [k.taskLimits, k.queues, k.queuePrefix];
  }

  resume(queue: string): string[] {
    const k = this.keys;
    return [k.paused(queue), k.wake(queue), k.ready(queue), k.readyList(queue)];
  }

  reap(queues: readonly string[]): string[] {
    const k = this.keys;
    const keys = [k.runPrefix, k.leases, k.fresh];
    for (const q of queues) keys.push(k.running(q), k.ready(q), k.wake(q), k.queueKeys(q));
    return keys;
  }

  trim(queues: readonly string[]): string[] {
    const k = this.keys;
    const keys = [k.runPrefix];
    for (const q of queues) keys.push(k.successful(q), k.failed(q), k.resultClasses(q));
    keys.push(k.done);
    for (const q of queues) keys.push(k.cancelled(q));
    return keys;
  }

  upgrade(): string[] {
    const k = this.keys;
    return [k.layout, k.leases, k.runPrefix, k.queues, k.queuePrefix, k.seq, k.upgrade];
  }

  requeue(id: string, queue: string, callRecord: string): string[] {
    const k = this.keys;
    return [
      k.run(id),
      k.ready(queue),
      k.failed(queue),
      k.quarantined(queue),
      k.wake(queue),
      k.stats(queue),
      k.leases,
      k.fresh,
      callRecord,
      k.done,
      k.resultClasses(queue),
      k.cancelled(queue),
    ];
  }

  requeueAll(queue: string, callRecord: string): string[] {
    const k = this.keys;
    return [
      k.runPrefix,
      k.ready(queue),
      k.failed(queue),
      k.quarantined(queue),
      k.cancelled(queue),
      k.wake(queue),
      k.stats(queue),
      k.leases,
      k.fresh,
      k.done,
      k.resultClasses(queue),
      callRecord,
    ];
  }

  cancel(id: string, queue: string, callRecord: string): string[] {
    const k = this.keys;
    return [
      k.run(id),
      k.ready(queue),
      k.deferred(queue),
      k.running(queue),
      k.cancelled(queue),
      k.stats(queue),
      k.leases,
      k.fresh,
      k.withdrawn(queue),
      callRecord,
      k.waiting,
      k.finished,
      k.done,
      k.metrics(queue),
      k.groupPrefix(queue),
      k.groups(queue),
      k.parked(queue),
      k.wake(queue),
    ];
  }

  dequeue(id: string, queue: string, callRecord: string): string[] {
    const k = this.keys;
    return [
      k.run(id),
      k.ready(queue),
      k.deferred(queue),
      k.stats(queue),
      k.leases,
      k.fresh,
      k.withdrawn(queue),
      callRecord,
      k.waiting,
      k.finished,
      k.done,
      k.groupPrefix(queue),
      k.groups(queue),
      k.parked(queue),
    ];
  }

  readyAge(queue: string): string[] {
    const k = this.keys;
    return [k.ready(queue), k.runPrefix, k.fresh, k.readyList(queue), k.withdrawn(queue)];
  }

  purge(queue: string, callRecord: string): string[] {
    const k = this.keys;
    const segments = (['ready', 'deferred', 'running', 'successful', 'failed', 'quarantined'] as const).map((segment) =>
      k.segment(queue, segment),
    );
    return [
      k.runPrefix,
      ...segments,
      k.wake(queue),
      k.leases,
      k.fresh,
      k.readyList(queue),
      k.withdrawn(queue),
      callRecord,
      k.waiting,
      k.finished,
      k.done,
      k.resultClasses(queue),
      k.cancelled(queue),
      k.groups(queue),
      k.groupPrefix(queue),
      k.parked(queue),
      k.grouped(queue),
      k.seq,
    ];
  }
}
