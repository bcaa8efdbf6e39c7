import type { RedisClient } from './redis-client.js';
import type { RedisKeys } from './redis-keys.js';

/**
 * A page of a queue's ready runs past those of its ready structures: the
 * runs parked in its limit groups' held sets (`lua/includes/claim-groups.lua`),
 * group by group in the order of the queue's `groups` index, each group's in
 * ready order. A listing shows them after the queue's other ready runs, so
 * that it holds every run `counts` calls ready.
 * @param offset the place of the page's first run among the queue's ready runs
 */
export async function readyPageWithParked(
  client: RedisClient,
  keys: RedisKeys,
  queue: string,
  offset: number,
  limit: number,
  readyPage: () => Promise<string[]>,
): Promise<string[]> {
  const page = await readyPage();
  if (page.length >= limit) return page;
  const [ready, listed, withdrawn, groups] = (
    (await client
      .multi()
      .zcard(keys.ready(queue))
      .llen(keys.readyList(queue))
      .hget(keys.withdrawn(queue), '')
      .zrange(keys.groups(queue), 0, -1)
      .exec()) ?? []
  ).map(([error, value]) => {
    if (error) throw error;
    return value;
  }) as [number, number, string | null, string[]];
  if (groups.length === 0) return page;
  // Where the parked runs begin: after the ready structures' live places.
  let skip = Math.max(0, offset - (ready + listed - Number(withdrawn ?? 0)));
  let wanted = limit - page.length;
  const held = groups.map((group) => keys.group(queue, 'held', group));
  const sizes = await Promise.all(held.map((key) => client.zcard(key)));
  for (let g = 0; g < held.length && wanted > 0; g++) {
    if (skip >= sizes[g]!) {
      skip -= sizes[g]!;
      continue;
    }
    const ids = await client.zrange(held[g]!, skip, skip + wanted - 1);
    page.push(...ids);
    wanted -= ids.length;
    skip = 0;
  }
  return page;
}
