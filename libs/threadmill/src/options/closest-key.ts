/**
 * The option a misspelt `key` most likely meant, for a "did you mean" hint,
 * or undefined when none is close. Case is ignored (`resultTTLMs` means
 * `resultTtlMs`). The nearest candidate by edit distance wins when it is
 * within a third of the longer word (`nmae` → `name`, `retries` → `retry`);
 * else a candidate that begins the key or that the key begins (`lease` →
 * `leaseTtlMs`, `retryPolicy` → `retry`). A far guess would mislead more than
 * the list of valid keys the message gives anyway.
 */
export function closestKey(key: string, candidates: readonly string[]): string | undefined {
  const wanted = key.toLowerCase();
  let best: { candidate: string; distance: number; close: boolean } | undefined;
  for (const candidate of candidates) {
    const lower = candidate.toLowerCase();
    const distance = editDistance(wanted, lower);
    const within = distance <= Math.ceil(Math.max(wanted.length, lower.length) / 3);
    const prefix = Math.min(wanted.length, lower.length) >= 3 && (lower.startsWith(wanted) || wanted.startsWith(lower));
    if (!within && !prefix) continue;
    // A candidate within the distance beats one related by prefix only; then the nearer wins, then the first listed.
    if (!best || (within && !best.close) || (within === best.close && distance < best.distance)) {
      best = { candidate, distance, close: within };
    }
  }
  return best?.candidate;
}

/**
 * Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`:
 * the optimal string alignment distance, so a swap typo (`nmae`) counts one.
 */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array.from({ length: b.length }, () => 0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}
