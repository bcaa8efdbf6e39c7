/** What a chunked action of one partition reports after each chunk. */
export interface PartChunk {
  /** Runs the action handled so far in this partition. */
  readonly soFar: number;
  /** Runs this chunk handled. */
  readonly chunk: number;
  /** Whether this was the partition's last chunk. */
  readonly done: boolean;
}

/**
 * The progress of an action run in chunks on every partition side by side (a
 * purge, a requeue of a segment): `report` gets the sum over the partitions
 * after each chunk of any of them, done once every partition is.
 * @returns the callback of partition `p`
 */
export function summedProgress(
  parts: number,
  report: (total: number, chunk: number, done: boolean) => void,
): (p: number, chunk: PartChunk) => void {
  const soFar = new Map<number, number>();
  let finished = 0;
  return (p, { soFar: partSoFar, chunk, done }) => {
    soFar.set(p, partSoFar);
    if (done) finished += 1;
    const total = [...soFar.values()].reduce((sum, n) => sum + n, 0);
    report(total, chunk, finished === parts);
  };
}
