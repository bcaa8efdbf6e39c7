import { Command, type Redis } from 'ioredis';

/** What a WAIT said about the stores it covers. */
export interface ReplicaAcknowledgement {
  /** Replicas that acknowledged every write the connection sent before the WAIT (0 when none could be sent). */
  readonly acknowledged: number;
  /** Why no WAIT answered for these stores, when none did. */
  readonly failure?: Error;
}

interface Waiting {
  readonly socket: unknown;
  readonly resolve: (acknowledgement: ReplicaAcknowledgement) => void;
}

/**
 * Group commit of replica confirmations on one connection to one master.
 *
 * Redis's `WAIT n t` blocks its connection until `n` replicas acknowledged
 * the replication offset of the last write that connection sent (or `t` ms
 * passed), and answers how many did: one WAIT sent after several stores
 * confirms them all. So a store asks here once its script answered, and
 * shares the next WAIT with every store that asked meanwhile: one WAIT at a
 * time per connection, and stores that arrive while it blocks wait for the
 * one after it, instead of a replica round trip each, one after the other.
 *
 * A WAIT confirms only writes of its own connection: a store names the socket
 * its script went out on, and a WAIT covers only stores of the socket it is
 * written to. A store whose socket closed before its WAIT was sent is told
 * that nothing acknowledged it (a WAIT on the new socket, which has written
 * nothing, would answer at once).
 */
export class ReplicaConfirmer {
  private waiting: Waiting[] = [];
  private sending = false;

  constructor(
    private readonly connection: Redis,
    private readonly replicas: number,
    private readonly timeoutMs: number,
  ) {}

  /**
   * How many replicas acknowledged the writes this connection sent, up to a
   * WAIT sent after this call, on `socket` (the socket the store's script
   * went out on). Never rejects.
   */
  confirm(socket: unknown): Promise<ReplicaAcknowledgement> {
    return new Promise((resolve) => {
      // A tick's stores (replies parsed from one read) share the WAIT.
      if (this.waiting.push({ socket, resolve }) === 1 && !this.sending) process.nextTick(() => this.send());
    });
  }

  private send(): void {
    const batch = this.waiting;
    this.waiting = [];
    const { connection } = this;
    // Written at once to this socket when the connection is ready (its offline queue is off).
    const socket = connection.status === 'ready' ? connection.stream : undefined;
    const covered: Waiting[] = [];
    for (const store of batch) {
      if (socket !== undefined && store.socket === socket) covered.push(store);
      else store.resolve({ acknowledged: 0, failure: new Error('the connection closed before the WAIT was sent') });
    }
    if (covered.length === 0) return;
    this.sending = true;
    const settle = (acknowledgement: ReplicaAcknowledgement): void => {
      this.sending = false;
      for (const store of covered) store.resolve(acknowledgement);
      // Stores that answered behind this WAIT ask in the microtasks that follow: the next WAIT waits for them.
      if (this.waiting.length > 0) process.nextTick(() => this.send());
    };
    (connection.sendCommand(new Command('wait', [this.replicas, this.timeoutMs])) as Promise<unknown>).then(
      (count) => settle({ acknowledged: Number(count) }),
      (error: unknown) =>
        settle({ acknowledged: 0, failure: error instanceof Error ? error : new Error(String(error)) }),
    );
  }
}
