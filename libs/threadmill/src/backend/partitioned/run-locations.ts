/** Most runs remembered: enough for the lookups that follow one another (a load, then a cancel). */
const REMEMBERED = 1_000;

/**
 * Runs found outside the partition their id routes to (stored before the
 * partition count changed, see `docs/scale-out.md`), so that the calls that
 * follow a lookup go straight there. Bounded: the oldest entries go first.
 */
export class RunLocations {
  private readonly partitions = new Map<string, number>();

  get(id: string): number | undefined {
    return this.partitions.size === 0 ? undefined : this.partitions.get(id);
  }

  set(id: string, partition: number): void {
    this.partitions.delete(id);
    this.partitions.set(id, partition);
    if (this.partitions.size > REMEMBERED) this.partitions.delete(this.partitions.keys().next().value!);
  }
}
