import { Cluster, type Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisUnavailableError } from '../../../errors/redis-unavailable.error.js';
import { UnconfirmedEnqueueError } from '../../../errors/unconfirmed-enqueue.error.js';
import type { ResolvedEnqueueConfirmation } from '../../../records/enqueue-confirmation.js';
import { keySlot } from '../../partitioned/partition-tags.js';
import type { NewRun, StoreOutcome } from '../../task-backend.js';
import type { RedisClient } from '../redis-client.js';
import type { RedisConnections } from '../redis-connections.js';
import { readStoreReply } from '../scripts/enqueue-args.js';
import { defineScripts, runScript } from '../scripts/redis-scripts.js';
import { ReplicaConfirmer } from './replica-confirmer.js';
import { redirectionOf } from './redirection.js';

/** The pause before a store refused in a migration or a failover (TRYAGAIN, CLUSTERDOWN, no master) is sent again. */
const RETRY_MS = 100;
/** How often a store waiting for its connection to open looks again. */
const CONNECT_POLL_MS = 10;
/** Most redirections one store follows (ioredis's default `maxRedirections`). */
const MAX_REDIRECTIONS = 16;

const IN_FLIGHT_ADVICE =
  'The connection failed while the enqueue was in flight, so it may or may not have been stored, and no replica ' +
  'confirmed it: retry it with the same `id` to be safe.';

/**
 * Stores confirmed by the master's replicas (`confirmEnqueues`): each store
 * runs its enqueue script on a connection of its own (`openConfirming`, opened
 * at the first store), then asks that same connection for a WAIT
 * (`ReplicaConfirmer`, shared by the stores of a moment). One per backend:
 * its partitions share it, and stores of partitions on one master share
 * that master's WAITs.
 *
 * On a Redis Cluster a store goes straight to the connection of the master
 * that the slot map names for its slot, not through the cluster client's
 * send (which follows MOVED and ASK by itself and would not say which node
 * ran the script). Any refusal (MOVED, ASK, TRYAGAIN, CLUSTERDOWN) means the
 * script did not run: it is sent again, to the node named, or after a pause.
 * The WAIT goes on the connection that answered the script, so it confirms
 * the master that ran it, whatever the topology did since (docs/storage.md,
 * "Confirmed stores").
 */
export class ConfirmedStores {
  private connection: RedisClient | undefined;
  private readonly confirmers = new WeakMap<Redis, ReplicaConfirmer>();
  /** Node connections of the cluster client that have the scripts defined. */
  private readonly prepared = new WeakSet<Redis>();

  constructor(
    private readonly connections: RedisConnections,
    readonly confirmation: ResolvedEnqueueConfirmation,
  ) {}

  private get connectTimeoutMs(): number {
    return this.connections.connectTimeoutMs;
  }

  /**
   * Stores `runs` with the enqueue script (`keys`, `args`), confirmed.
   * @throws UnconfirmedEnqueueError when fewer replicas acknowledged in time: the runs are stored on the master
   * @throws RedisUnavailableError when Redis could not be reached, or the connection failed with the store in flight
   */
  async store(
    runs: readonly NewRun[],
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<StoreOutcome> {
    const { reply, acknowledged, failure } = await this.run(slotOf(keys[0]!), keys, args);
    const outcome = readStoreReply(runs, reply as (number | string)[]);
    const { replicas, timeoutMs } = this.confirmation;
    if (acknowledged >= replicas) return outcome;
    const runIds = runs.map((run, i) => outcome.deduplicated?.[i] ?? run.id);
    const store = { runIds, unconfirmedIds: runIds, acknowledged, replicas, timeoutMs, outcome };
    throw new UnconfirmedEnqueueError(store, failure);
  }

  /** Runs the enqueue script on the master of `slot`, then confirms it on the same connection. */
  private async run(
    slot: number,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<{ reply: unknown; acknowledged: number; failure?: Error }> {
    const deadline = Date.now() + this.connectTimeoutMs;
    // A node an ASK or a MOVED named: the next try goes there (with ASKING for an ASK).
    let redirected: { node: Redis; asking: boolean } | undefined;
    for (let redirections = 0; ;) {
      const { node, asking } = redirected ?? { node: await this.master(slot, deadline), asking: false };
      redirected = undefined;
      if (!(await this.ready(node, deadline))) {
        // Its node is gone (a failover under way): ask the slot map again.
        await this.pause();
        continue;
      }
      // The connection is ready and buffers nothing: both commands are written now, to this socket.
      const socket = node.stream;
      if (asking) void node.asking().catch(() => undefined);
      const answer = await this.connections.guard(
        () =>
          runScript(node, 'enqueue', keys, args).then(
            (reply) => ({ reply, redirection: undefined }),
            (error: unknown) => {
              // A refusal ran nothing; any other failure may have come after the script ran.
              const redirection = redirectionOf(error);
              if (redirection === undefined || redirections >= MAX_REDIRECTIONS || Date.now() >= deadline) throw error;
              return { reply: undefined, redirection };
            },
          ),
        IN_FLIGHT_ADVICE,
      );
      const { redirection } = answer;
      if (redirection === undefined) {
        return { reply: answer.reply, ...(await this.confirmer(node).confirm(socket)) };
      }
      redirections++;
      const target = redirection.to === undefined ? undefined : this.node(redirection.to);
      if (redirection.kind === 'moved') this.refresh();
      if (target) redirected = { node: target, asking: redirection.kind === 'ask' };
      else await this.pause();
    }
  }

  /** Asks the cluster for its slot map again, and waits a moment. */
  private async pause(): Promise<void> {
    this.refresh();
    await sleep(RETRY_MS);
  }

  private refresh(): void {
    if (this.connection instanceof Cluster) this.connection.refreshSlotsCache();
  }

  /** The connection to the master of `slot`: the confirming connection itself, or its cluster's node. */
  private async master(slot: number, deadline: number): Promise<Redis> {
    const connection = (this.connection ??= this.open());
    if (!(connection instanceof Cluster)) return connection;
    for (;;) {
      const ready = connection.status === 'ready';
      if (ready) {
        const key = connection.slots[slot]?.[0];
        const node = key === undefined ? undefined : this.node(key);
        if (node) return node;
        this.refresh();
      }
      if (Date.now() >= deadline) {
        throw new RedisUnavailableError(
          this.connections.describe(),
          new Error(`no master of slot ${slot} was reachable within ${this.connectTimeoutMs} ms`),
        );
      }
      await sleep(ready ? RETRY_MS : CONNECT_POLL_MS);
    }
  }

  /** The cluster's connection to node `key` (`host:port`), with the scripts defined; undefined if it has none. */
  private node(key: string): Redis | undefined {
    const { connection } = this;
    if (!(connection instanceof Cluster)) return undefined;
    const node = connection
      .nodes('all')
      .find(({ options, status }) => `${options.host}:${options.port}` === key && status !== 'end');
    if (node && !this.prepared.has(node)) {
      defineScripts(node);
      this.prepared.add(node);
    }
    return node;
  }

  private open(): RedisClient {
    const connection = this.connections.openConfirming(this.confirmation.timeoutMs);
    if (!(connection instanceof Cluster)) defineScripts(connection);
    return connection;
  }

  /**
   * Waits for `node` to be ready: true once it is, false if its connection
   * ended first (a cluster's node connection does not reconnect).
   * @throws RedisUnavailableError when it is not ready by `deadline`
   */
  private async ready(node: Redis, deadline: number): Promise<boolean> {
    while (node.status !== 'ready') {
      if (node.status === 'wait') void node.connect().catch(() => undefined);
      if (Date.now() >= deadline) {
        throw new RedisUnavailableError(
          this.connections.describe(),
          new Error(`not connected within ${this.connectTimeoutMs} ms (${node.status})`),
        );
      }
      if (node.status === 'end') return false;
      await sleep(CONNECT_POLL_MS);
    }
    return true;
  }

  private confirmer(node: Redis): ReplicaConfirmer {
    let confirmer = this.confirmers.get(node);
    if (!confirmer) {
      const { replicas, timeoutMs } = this.confirmation;
      this.confirmers.set(node, (confirmer = new ReplicaConfirmer(node, replicas, timeoutMs)));
    }
    return confirmer;
  }
}

/** The Cluster slot of a backend key: that of its hash tag (`threadmill:{alias}:…`). */
function slotOf(key: string): number {
  const open = key.indexOf('{');
  return keySlot(key.slice(open + 1, key.indexOf('}', open + 1)));
}
