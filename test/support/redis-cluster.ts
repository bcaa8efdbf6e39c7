import { RedisServer } from '@threadmill/nestjs/testing';
import { Cluster } from 'ioredis';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { command } from './redis-command.js';
import { waitUntil } from './wait.js';

const run = promisify(execFile);

/**
 * A real Redis Cluster of `masters` redis-server processes on loopback ports,
 * each with `replicas` replica processes (own ports and directories),
 * created with `redis-cli --cluster create`, for the tests.
 */
export class RedisCluster {
  private constructor(readonly nodes: RedisServer[]) {}

  /** @param args more `redis-server` arguments for every node (a later one overrides, e.g. the node timeout) */
  static async start(masters = 3, replicas = 0, args: string[] = []): Promise<RedisCluster> {
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () =>
        RedisServer.start({
          appendonly: true,
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '5000',
            ...args,
          ],
        }),
      ),
    );
    const cluster = new RedisCluster(nodes);
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitUntil('the cluster is ok on every node', async () => {
      const states = await Promise.all(nodes.map((node) => cluster.command(node, 'CLUSTER', 'INFO')));
      return states.every((info) => /cluster_state:ok/.test(String(info)));
    });
    if (replicas > 0) {
      await waitUntil('every replica is in sync with its master', async () => {
        const roles = await Promise.all(nodes.map((node) => cluster.command(node, 'INFO', 'replication')));
        return roles.every((info) => !/role:slave/.test(String(info)) || /master_link_status:up/.test(String(info)));
      });
    }
    return cluster;
  }

  /** The nodes that serve slots now (the masters), in slot order. */
  async masters(): Promise<RedisServer[]> {
    const slots = await this.slots();
    const ports = [...new Set(slots.sort((a, b) => a[0] - b[0]).map(([, , [, port]]) => port))];
    return ports.map((port) => this.nodes.find((node) => node.port === port)!);
  }

  /**
   * Resolves once every replica has acknowledged all its master had written
   * when this was called: a replica that has just synced may not have applied
   * (nor acknowledged) anything yet, and a kill of its master would then lose
   * more than a failover's usual window.
   */
  async replicasCaughtUp(timeoutMs = 15_000): Promise<void> {
    const masters = await this.masters();
    const offsets = await Promise.all(
      masters.map(async (node) => Number(/master_repl_offset:(\d+)/.exec(await this.replication(node))![1])),
    );
    await waitUntil(
      'every replica acknowledged its master',
      async () => {
        const infos = await Promise.all(masters.map((node) => this.replication(node)));
        return infos.every((info, i) =>
          [...info.matchAll(/slave\d+:.*?offset=(\d+)/g)].every((match) => Number(match[1]) >= offsets[i]!),
        );
      },
      timeoutMs,
    );
  }

  private async replication(node: RedisServer): Promise<string> {
    return String(await this.command(node, 'INFO', 'replication'));
  }

  /** A client for the whole cluster. */
  client(): Cluster {
    return new Cluster(
      this.nodes.map((node) => ({ host: '127.0.0.1', port: node.port })),
      // As the README advises: nothing buffered while the cluster is away.
      { enableOfflineQueue: false },
    );
  }

  /** Runs one command on one node (one try: a node a test killed refuses, and the caller asks another). */
  command(node: RedisServer, ...args: string[]): Promise<unknown> {
    return command(node, ...args);
  }

  /** `CLUSTER SLOTS` as a node still up answers it (a test may have killed some). */
  private async slots(): Promise<[number, number, [string, number]][]> {
    for (const node of this.nodes) {
      try {
        return (await this.command(node, 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      } catch {
        // Down: ask the next one.
      }
    }
    throw new Error('no node of the cluster answers');
  }

  /** The node that serves `slot` now. */
  async owner(slot: number): Promise<RedisServer> {
    const slots = await this.slots();
    const range = slots.find(([from, to]) => slot >= from && slot <= to)!;
    return this.nodes.find((node) => node.port === range[2][1])!;
  }

  /** The replica of `master` (the first its INFO names). */
  async replicaOf(master: RedisServer): Promise<RedisServer> {
    const info = String(await this.command(master, 'INFO', 'replication'));
    const port = Number(/slave0:ip=[^,]+,port=(\d+)/.exec(info)?.[1]);
    const replica = this.nodes.find((node) => node.port === port);
    if (!replica) throw new Error(`no replica of the master on port ${master.port}:\n${info}`);
    return replica;
  }

  /** Moves `slot` and its keys to `target`, as `redis-cli --cluster reshard` does, while clients keep working. */
  async migrate(slot: number, target: RedisServer): Promise<void> {
    const targetId = await this.startMigration(slot, target);
    await this.finishMigration(slot, targetId);
  }

  /**
   * The first half of {@link migrate}: marks `slot` migrating to `target` and
   * moves its keys there, and leaves the slot to its owner, which answers ASK
   * (or TRYAGAIN) for keys it no longer has. Resolves with the target's id.
   */
  async startMigration(slot: number, target: RedisServer): Promise<string> {
    const source = await this.owner(slot);
    const id = async (node: RedisServer) => String(await this.command(node, 'CLUSTER', 'MYID'));
    const [sourceId, targetId] = [await id(source), await id(target)];
    await this.command(target, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId);
    await this.command(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', targetId);
    for (;;) {
      const keys = (await this.command(source, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[];
      if (keys.length === 0) break;
      await this.command(source, 'MIGRATE', '127.0.0.1', String(target.port), '', '0', '5000', 'KEYS', ...keys);
    }
    return targetId;
  }

  /** The second half of {@link migrate}: gives `slot` to the node of `targetId`. */
  async finishMigration(slot: number, targetId: string): Promise<void> {
    // Masters only: a replica refuses SETSLOT, and learns the move from its master.
    for (const node of await this.masters()) {
      await this.command(node, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', targetId);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}
