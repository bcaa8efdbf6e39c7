/** Items of one call that go to one partition, with their places in the call. */
export interface PartitionGroup<T> {
  readonly items: T[];
  /** `items[i]` is the call's item at `places[i]`. */
  readonly places: number[];
}

/** Splits `items` by partition, keeping their order within each; one group per partition that has items. */
export function groupByPartition<T>(
  items: readonly T[],
  partitionOf: (item: T) => number,
): Map<number, PartitionGroup<T>> {
  const groups = new Map<number, PartitionGroup<T>>();
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const p = partitionOf(item);
    let group = groups.get(p);
    if (group === undefined) groups.set(p, (group = { items: [], places: [] }));
    group.items.push(item);
    group.places.push(i);
  }
  return groups;
}

/**
 * Runs `call` on each group (in parallel: partitions live on different
 * masters) and puts each group's per-item answers back in the call's order.
 */
export async function perPartition<T, R>(
  groups: Map<number, PartitionGroup<T>>,
  length: number,
  call: (partition: number, items: T[]) => Promise<readonly R[]>,
): Promise<R[]> {
  const answers: R[] = Array.from({ length });
  await Promise.all(
    [...groups].map(async ([p, group]) => {
      const replies = await call(p, group.items);
      group.places.forEach((place, i) => (answers[place] = replies[i]!));
    }),
  );
  return answers;
}

/** The sender part of a lease token (`<sender>.<call>`, see `CallIds`): which backend instance granted it. */
export function senderOf(token: string): string {
  return token.slice(0, token.lastIndexOf('.'));
}
