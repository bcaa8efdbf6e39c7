import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './redis-client.js';
import type { RedisKeys } from './redis-keys.js';
import { doneFinishedAt } from './done-record.js';
import { readTogether } from './read-together.js';

/** The finished segments, whose runs are kept for a TTL and indexed per TTL class. */
export type FinishedSegment = 'successful' | 'failed';

/** Rounds a read tries before it reads with the classes it found last (they change only when a class is first used or emptied). */
const MAX_ROUNDS = 5;

/**
 * Reads that span every finished index of some queues: the default ones
 * (`q:<queue>:successful`, `q:<queue>:failed`) and those of the TTL classes
 * in use (`q:<queue>:result-classes`: `lua/includes/result-classes.lua`),
 * in one MULTI with the classes themselves. A read is made again when the
 * classes it found are not those it read: the counts and pages it returns
 * are of one state of every index.
 */
export class FinishedIndexes {
  constructor(
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {}

  /**
   * The replies of the reads `queue` adds for each queue, given the members
   * of its TTL classes (empty, unless found by an earlier round): per queue,
   * the replies in order, and the classes read with them.
   */
  async read(
    queues: readonly string[],
    queue: (batch: ChainableCommander, name: string, classes: readonly string[]) => number,
  ): Promise<{ replies: unknown[][]; classes: string[][] }> {
    let classes: string[][] = queues.map(() => []);
    for (let round = 1; ; round++) {
      const counts: number[] = [];
      const read = await readTogether(this.client, (batch) => {
        queues.forEach((name, q) => {
          counts[q] = queue(batch, name, classes[q]!);
          batch.smembers(this.keys.resultClasses(name));
        });
      });
      const values = read.map(([error, value]) => {
        if (error) throw error;
        return value;
      });
      const replies: unknown[][] = [];
      const found: string[][] = [];
      let at = 0;
      queues.forEach((_, q) => {
        replies.push(values.slice(at, at + counts[q]!));
        found.push(((values[at + counts[q]!] as string[]) ?? []).sort());
        at += counts[q]! + 1;
      });
      const same = found.every((members, q) => members.join('\n') === classes[q]!.join('\n'));
      if (same || round === MAX_ROUNDS) return { replies, classes: same ? classes : found };
      classes = found;
    }
  }

  /** The index keys of `segment` of `queue`: the default one, then its TTL classes' among `classes`. */
  indexKeys(queue: string, segment: FinishedSegment, classes: readonly string[]): string[] {
    const keys = [this.keys.segment(queue, segment)];
    for (const member of classes) {
      if (member.startsWith(`${segment}:`)) keys.push(this.keys.resultClass(queue, member));
    }
    return keys;
  }

  /**
   * A page of the ids of `queue`'s finished `segment`, newest first across
   * its indexes (by finish time; ties keep the order of the indexes, the
   * default first).
   */
  async page(queue: string, segment: FinishedSegment, offset: number, limit: number): Promise<string[]> {
    const newest = offset + limit;
    const { replies } = await this.read([queue], (batch, name, known) => {
      const keys = this.indexKeys(name, segment, known);
      // One index (no TTL class in use): the page is a range of it, however deep. Several
      // are merged from their newest entries, so a deep page reads every entry before it.
      const from = keys.length === 1 ? offset : 0;
      for (const key of keys) {
        // A successful index is a list of ids, oldest first (lua/includes/successful-index.lua).
        if (segment === 'successful') batch.lrange(key, -newest, -(from + 1));
        else batch.zrevrange(key, from, newest - 1, 'WITHSCORES');
      }
      return keys.length;
    });
    const ranged = replies[0]!.length === 1;
    const pages =
      segment === 'successful'
        ? await this.successfulPages(replies[0] as string[][])
        : replies[0]!.map((reply) => scoredNewestFirst(reply as string[]));
    return mergeNewestFirst(pages, newest).slice(ranged ? 0 : offset);
  }

  /**
   * Successful index pages (ids, oldest first) as [finishedAt, id], newest
   * first. One index needs no times (its order is the page's); several are
   * merged by the finish times their runs' records hold, read in one more
   * call: only a queue with tasks of their own TTL pays it. A run trimmed
   * between the two reads is left out, as it is gone.
   */
  private async successfulPages(lists: readonly string[][]): Promise<[number, string][][]> {
    if (lists.length === 1) return [lists[0]!.toReversed().map((id): [number, string] => [0, id])];
    const times = await this.finishTimes(lists.flat());
    return lists.map((list) =>
      list
        .toReversed()
        .filter((id) => times.has(id))
        .map((id): [number, string] => [times.get(id)!, id]),
    );
  }

  /** When each of successful runs `ids` finished: the head of its done record, or its run hash's `finishedAt`. */
  private async finishTimes(ids: readonly string[]): Promise<Map<string, number>> {
    const times = new Map<string, number>();
    if (ids.length === 0) return times;
    const records = await this.client.hmget(this.keys.done, ...ids);
    const hashed = ids.filter((_, i) => records[i] === null);
    ids.forEach((id, i) => {
      const record = records[i];
      if (record) times.set(id, doneFinishedAt(record));
    });
    if (hashed.length > 0) {
      const pipeline = this.client.pipeline();
      for (const id of hashed) pipeline.hget(this.keys.run(id), 'finishedAt');
      const replies = (await pipeline.exec()) ?? [];
      hashed.forEach((id, i) => {
        const [error, value] = replies[i] ?? [];
        if (error) throw error;
        if (typeof value === 'string') times.set(id, Number(value));
      });
    }
    return times;
  }
}

/**
 * The first `count` ids of several pages, each newest first, merged by
 * finish time: each page keeps its own order (a successful index after a
 * clock step back is in finish order, not in time order), and a tie goes
 * to the earlier page.
 */
function mergeNewestFirst(pages: readonly [number, string][][], count: number): string[] {
  if (pages.length === 1) return pages[0]!.slice(0, count).map(([, id]) => id);
  const heads = pages.map(() => 0);
  const merged: string[] = [];
  while (merged.length < count) {
    let best = -1;
    pages.forEach((page, p) => {
      const head = page[heads[p]!];
      if (head && (best < 0 || head[0] > pages[best]![heads[best]!]![0])) best = p;
    });
    if (best < 0) break;
    merged.push(pages[best]![heads[best]!++]![1]);
  }
  return merged;
}

/** ZREVRANGE WITHSCORES pairs as [score, id]. */
function scoredNewestFirst(flat: readonly string[]): [number, string][] {
  const page: [number, string][] = [];
  for (let i = 0; i < flat.length; i += 2) page.push([Number(flat[i + 1]), flat[i]!]);
  return page;
}
