/**
 * Lists that grow per attempt (worker ids, errors) are stored as JSON array
 * bodies without brackets (`"a","b"`), so Lua appends with string
 * concatenation instead of decoding and re-encoding JSON. This reads one back.
 */
export function parseFragment<T>(fragment: string | undefined | null): T[] {
  return fragment ? (JSON.parse(`[${fragment}]`) as T[]) : [];
}
