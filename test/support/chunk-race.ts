/** Ids `<prefix>0` to `<prefix>{n-1}`. */
export const idRange = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/**
 * A promise and the function that settles it: a chunked operation's progress
 * callback waits on one while the test acts between two of its chunks.
 */
export function signal(): { promise: Promise<void>; resolve: () => void } {
  const settled = { resolve: (): void => undefined };
  const promise = new Promise<void>((settle) => (settled.resolve = settle));
  return { promise, resolve: () => settled.resolve() };
}
