import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/redis-client.js';

/** Slots of a Redis Cluster. */
const SLOTS = 16_384;
/** Most tags tried for one partition: each lands on a given master with a chance of about its share of slots. */
const MAX_TRIES = 10_000;

/** The Redis Cluster slot of hash tag `tag` (CRC16-XMODEM of its bytes, modulo 16384), as Redis computes it. */
export function keySlot(tag: string): number {
  let crc = 0;
  for (const byte of Buffer.from(tag)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}

/** The `j`th candidate alias of partition `p` (p ≥ 1) of backend `alias`. */
function candidate(alias: string, p: number, j: number): string {
  return j === 0 ? `${alias}:p${p}` : `${alias}:p${p}.${j}`;
}

/** A master's slot ranges, as `CLUSTER SLOTS` lists them. */
type SlotRanges = [from: number, to: number, master: [host: string, port: number, ...rest: unknown[]]][];

/**
 * The keyspace aliases of a backend's partitions, recorded in its home
 * keyspace (`partition-tags`, a HASH: partition → alias) the first time a
 * process needs a partition, so that every process uses the same ones. On a
 * Redis Cluster a new partition's alias is chosen so that its hash tag's
 * slot is on the master holding the fewest of the backend's partitions at
 * that moment: the partitions spread evenly over the masters as the cluster
 * stands then (moving slots later moves partitions with them). Elsewhere
 * it is `<alias>:p<n>`.
 */
export class PartitionTags {
  constructor(
    private readonly client: RedisClient,
    private readonly key: string,
    private readonly alias: string,
  ) {}

  /** The aliases of partitions 0 to `span - 1` (0 is the home partition, the backend's alias itself). */
  async aliases(span: number): Promise<string[]> {
    let recorded = await this.client.hgetall(this.key);
    const aliases = [this.alias];
    let chose = false;
    for (let p = 1; p < span; p++) {
      let alias = recorded[String(p)];
      if (alias === undefined) {
        alias = await this.choose(p, aliases);
        // Of processes that choose at once, the first to record wins; the others read it.
        await this.client.hsetnx(this.key, String(p), alias);
        chose = true;
      }
      aliases.push(alias);
    }
    if (!chose) return aliases;
    recorded = await this.client.hgetall(this.key);
    return aliases.map((alias, p) => (p === 0 ? alias : recorded[String(p)]!));
  }

  /** An alias for partition `p` whose slot is on the master with the fewest of `taken`'s slots. */
  private async choose(p: number, taken: readonly string[]): Promise<string> {
    if (!(this.client instanceof Cluster)) return candidate(this.alias, p, 0);
    const ranges = (await this.client.cluster('SLOTS')) as unknown as SlotRanges;
    const masterOf = (slot: number): string => {
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      return range ? `${range[2][0]}:${range[2][1]}` : '';
    };
    const load = new Map<string, number>();
    for (const [, , [host, port]] of [...ranges].sort((a, b) => a[0] - b[0])) load.set(`${host}:${port}`, 0);
    for (const alias of taken) {
      const master = masterOf(keySlot(alias));
      load.set(master, (load.get(master) ?? 0) + 1);
    }
    const target = [...load].reduce((best, entry) => (entry[1] < best[1] ? entry : best))[0];
    for (let j = 0; j < MAX_TRIES; j++) {
      if (masterOf(keySlot(candidate(this.alias, p, j))) === target) return candidate(this.alias, p, j);
    }
    return candidate(this.alias, p, 0);
  }
}
