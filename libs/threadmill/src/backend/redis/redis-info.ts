import { Cluster } from 'ioredis';
import type { MemoryUsage } from '../task-backend.js';
import type { RedisClient } from './redis-client.js';

/** The `key:value` lines of an INFO reply. */
export function parseInfo(info: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** One node's memory figures from its `INFO memory` section. */
function memoryOf(info: Map<string, string>): MemoryUsage {
  const bytes = (field: string) => {
    const value = Number(info.get(field));
    return Number.isFinite(value) ? value : null;
  };
  const max = bytes('maxmemory');
  return {
    usedBytes: bytes('used_memory'),
    // 0 is Redis's "no limit".
    maxBytes: max === 0 ? null : max,
    datasetBytes: bytes('used_memory_dataset'),
  };
}

/** How full a node is, for choosing among a cluster's masters: an unlimited node counts as empty. */
const fullness = (usage: MemoryUsage): number =>
  usage.usedBytes !== null && usage.maxBytes !== null ? usage.usedBytes / usage.maxBytes : 0;

/**
 * Redis's memory: `used_memory`, `maxmemory` and `used_memory_dataset`, from
 * one `INFO memory` (which managed services allow where `CONFIG` is renamed).
 * On a Cluster, the fullest master's: every key of a backend sits on the
 * master of its hash tag, and reading each master's INFO is simpler, and errs
 * on the side of warning, than asking which one holds the slot.
 */
export async function readMemoryUsage(client: RedisClient): Promise<MemoryUsage> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const usages = await Promise.all(nodes.map(async (node) => memoryOf(parseInfo(await node.info('memory')))));
  return usages.reduce((fullest, usage) => (fullness(usage) > fullness(fullest) ? usage : fullest));
}
