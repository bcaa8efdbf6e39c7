import { randomBytes } from 'node:crypto';
import type { Acknowledgement } from '../task-backend.js';
import type { RedisKeys } from './redis-keys.js';

/**
 * Records of recent calls a backend instance keeps, one key each, taken in
 * turn (see `lua/includes/call-record.lua`). ioredis resends a call before
 * any later one goes out; the acknowledger sends a failed batch again within
 * 50 ms, while its other lane may go on acknowledging: the record of the
 * first copy must outlast the calls made meanwhile. A busy process keeps all
 * of them, about 100 bytes each, for ten minutes.
 */
const CALL_RECORD_SLOTS = 64;

/** A call's id, and the key of the slot where it records itself. */
export interface Call {
  readonly id: string;
  readonly record: string;
}

/**
 * The ids of one backend instance's calls: of those that recognise a resent
 * copy of themselves (claim, acknowledge, requeue, dequeue, purge), and of
 * those that grant leases (claim, reap), whose ids are the leases' tokens.
 * An id is a random sender id and a counter: unique, so that no process ever
 * passes for another, nor for one that ran before a Redis restart from an
 * older state, and no token is ever granted twice (docs/storage.md, R4).
 */
export class CallIds {
  private readonly sender = randomBytes(6).toString('base64url');
  private calls = 0;
  /**
   * The call number of each acknowledgement batch sent: a batch sent again
   * after a failure (the acknowledger retries it) is the same call.
   */
  private readonly ackCalls = new WeakMap<readonly Acknowledgement[], number>();

  constructor(private readonly keys: RedisKeys) {}

  next(): Call {
    return this.call(++this.calls);
  }

  /** No call of its own, for a script call that keeps no record: its slot key is passed but never written. */
  unnamed(): Call {
    return { id: '', record: this.keys.lastCall(this.sender, 0) };
  }

  /** The call of acknowledgement batch `acks`: the same as its first send's, when it is sent again. */
  acknowledgement(acks: readonly Acknowledgement[]): Call {
    let call = this.ackCalls.get(acks);
    if (call === undefined) {
      call = ++this.calls;
      this.ackCalls.set(acks, call);
    }
    return this.call(call);
  }

  private call(call: number): Call {
    return { id: `${this.sender}.${call}`, record: this.keys.lastCall(this.sender, call % CALL_RECORD_SLOTS) };
  }
}
