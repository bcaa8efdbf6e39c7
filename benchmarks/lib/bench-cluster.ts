/**
 * A Redis Cluster of fresh redis-servers on loopback for the tools of
 * `benchmarks/tools/` (AOF off: their figures are the commands', not the
 * disk's), created with `redis-cli --cluster create`.
 */
import { RedisServer } from '@threadmill/nestjs/testing';
import { Redis } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';

/** Runs `command` on `node` until `done` holds of its reply. */
export async function untilReply(
  node: RedisServer,
  command: string[],
  done: (reply: string) => boolean,
): Promise<void> {
  const client = new Redis(node.url);
  try {
    while (!done(String(await client.call(command[0]!, ...command.slice(1))))) await delay(100);
  } finally {
    client.disconnect();
  }
}

/**
 * Starts `masters` masters with `replicas` replicas each; resolves with every
 * node (masters first, as `redis-cli` assigns them) once the cluster is ok on
 * each and every replica is in sync.
 */
export async function startBenchCluster(masters: number, replicas = 0): Promise<RedisServer[]> {
  const nodes = await Promise.all(
    Array.from({ length: masters * (1 + replicas) }, () =>
      RedisServer.start({
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'],
      }),
    ),
  );
  execFileSync('redis-cli', [
    '--cluster',
    'create',
    ...nodes.map((node) => `127.0.0.1:${node.port}`),
    '--cluster-replicas',
    String(replicas),
    '--cluster-yes',
  ]);
  for (const node of nodes) {
    await untilReply(node, ['CLUSTER', 'INFO'], (info) => info.includes('cluster_state:ok'));
    await untilReply(
      node,
      ['INFO', 'replication'],
      (info) => !info.includes('role:slave') || info.includes('link_status:up'),
    );
  }
  return nodes;
}
