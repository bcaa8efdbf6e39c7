import type { RedisKeys } from './redis-keys.js';
import type { RedisClient } from './redis-client.js';
import type { RedisConnections } from './redis-connections.js';
import { runScript } from './scripts/redis-scripts.js';
import { ScriptKeys } from './scripts/script-keys.js';
import {
  storedSchedule,
  type DueSchedules,
  type FireOutcome,
  type ScheduleDeclaration,
  type ScheduleFire,
  type ScheduleStore,
  type StoredSchedule,
} from '../schedule-store.js';

/** Pairs of a flat HGETALL-style reply as a record. */
function record(flat: readonly string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
  return fields;
}

/** The Redis {@link ScheduleStore}: one script per change (`lua/schedule-*.lua`). */
export class RedisScheduleStore implements ScheduleStore {
  private readonly scriptKeys: ScriptKeys;

  constructor(
    private readonly connections: RedisConnections,
    private readonly client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.scriptKeys = new ScriptKeys(keys);
  }

  async declare(
    declarations: readonly ScheduleDeclaration[],
    queues: readonly string[],
    staleMs: number,
  ): Promise<string[]> {
    await this.connections.ready();
    const args: (string | number)[] = [staleMs, queues.length, ...queues];
    for (const d of declarations) args.push(d.id, d.digest, d.def, d.queue);
    return (await runScript(this.client, 'scheduleDeclare', this.scriptKeys.scheduleDeclare(), args)) as string[];
  }

  async upsert(id: string, digest: string, def: string, queue: string): Promise<'created' | 'replaced' | 'unchanged'> {
    await this.connections.ready();
    const keys = this.scriptKeys.scheduleUpsert(id);
    return (await runScript(this.client, 'scheduleUpsert', keys, [id, digest, def, queue])) as
      'created' | 'replaced' | 'unchanged';
  }

  async remove(id: string): Promise<boolean> {
    await this.connections.ready();
    const reply = await this.client.multi().del(this.keys.schedule(id)).zrem(this.keys.schedules, id).exec();
    return reply?.[0]?.[1] === 1;
  }

  async due(limit: number): Promise<DueSchedules> {
    await this.connections.ready();
    const keys = this.scriptKeys.scheduleDue();
    const [now, next, ...rest] = (await runScript(this.client, 'scheduleDue', keys, [limit])) as [
      number,
      string,
      ...(string | string[])[],
    ];
    const due: StoredSchedule[] = [];
    for (let i = 0; i < rest.length; i += 2)
      due.push(storedSchedule(rest[i] as string, record(rest[i + 1] as string[])));
    return { now, nextDueAt: next === '' ? null : Number(next), due };
  }

  async fire(fire: ScheduleFire): Promise<{ outcome: FireOutcome; now: number }> {
    await this.connections.ready();
    const q = fire.queue;
    const keys = this.scriptKeys.scheduleFire(fire.id, q);
    const args = [
      fire.id,
      fire.digest,
      fire.next,
      fire.slot === null ? '' : String(fire.slot),
      fire.runId,
      fire.following === null ? 'end' : String(fire.following),
      fire.skipped,
      fire.overlapSkip ? '1' : '0',
      fire.limit,
      q,
      fire.priority,
      fire.leaseTtlMs > 0 ? String(fire.leaseTtlMs) : '',
      fire.payload,
      fire.firedBy,
    ];
    const [outcome, now] = (await runScript(this.client, 'scheduleFire', keys, args)) as [FireOutcome, number];
    return { outcome, now };
  }

  async list(): Promise<StoredSchedule[]> {
    await this.connections.ready();
    const ids = await this.client.zrange(this.keys.schedules, 0, -1);
    if (ids.length === 0) return [];
    const pipeline = this.client.pipeline();
    for (const id of ids) pipeline.hgetall(this.keys.schedule(id));
    const replies = (await pipeline.exec()) ?? [];
    return ids
      .map((id, i) => storedSchedule(id, (replies[i]?.[1] ?? {}) as Record<string, string>))
      .filter((schedule) => schedule.def !== null)
      .sort((a, b) => a.id.localeCompare(b.id));
  }
}
