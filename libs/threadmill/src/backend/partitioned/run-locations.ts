import type { RedisTaskBackend } from '../redis/redis.backend.js';
import type { StoredRun } from '../task-backend.js';
import { groupByPartition, perPartition } from './partition-groups.js';
import type { PartitionSet } from './partition-set.js';

/** Most runs remembered: enough for the lookups that follow one another (a load, then a cancel). */
const REMEMBERED = 1_000;

/**
 * Where runs are, by id: the partition the id routes to (`PartitionRouter`),
 * or, for a run found outside it (stored before the partition count changed,
 * see `docs/scale-out.md`), where it was found, remembered so that the calls
 * that follow a lookup go straight there. Bounded: the oldest entries go
 * first.
 */
export class RunLocations {
  private readonly found = new Map<string, number>();

  constructor(private readonly set: PartitionSet) {}

  /** The partition run `id` is in: where it was found last when its id routes elsewhere, else where it routes. */
  partitionOf(id: string): number {
    return (this.found.size === 0 ? undefined : this.found.get(id)) ?? this.set.router.partitionOf(id);
  }

  /**
   * Each run from the partition its id routes to; an id not found there is
   * looked for in the others of the span, and remembered where it was found.
   */
  async loadMany(ids: readonly string[]): Promise<(StoredRun | null)[]> {
    const groups = groupByPartition(ids, (id) => this.partitionOf(id));
    const runs = await perPartition(groups, ids.length, (p, items) => this.set.part(p).loadMany(items));
    const missing = ids.flatMap((_, i) => (runs[i] === null ? [i] : []));
    if (missing.length === 0) return runs;
    await Promise.all(
      this.set.partitions().map(async (p) => {
        const places = missing.filter((i) => !groups.get(p)?.places.includes(i));
        if (places.length === 0) return;
        const found = await this.set.part(p).loadMany(places.map((i) => ids[i]!));
        places.forEach((place, i) => {
          if (found[i] === null || runs[place] !== null) return;
          runs[place] = found[i]!;
          this.remember(ids[place]!, p);
        });
      }),
    );
    return runs;
  }

  /**
   * `call` on the partition run `id` routes to; when that partition has no
   * such run (`status` ''), on the others in turn until one has it.
   */
  async whereFound<R extends { status: string }>(id: string, call: (part: RedisTaskBackend) => Promise<R>): Promise<R> {
    const routed = this.partitionOf(id);
    const reply = await call(this.set.part(routed));
    if (reply.status !== '') return reply;
    for (const p of this.set.partitions()) {
      if (p === routed) continue;
      const other = await call(this.set.part(p));
      if (other.status !== '') {
        this.remember(id, p);
        return other;
      }
    }
    return reply;
  }

  private remember(id: string, partition: number): void {
    this.found.delete(id);
    this.found.set(id, partition);
    if (this.found.size > REMEMBERED) this.found.delete(this.found.keys().next().value!);
  }
}
