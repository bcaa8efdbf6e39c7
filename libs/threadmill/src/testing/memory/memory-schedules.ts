import type { NewRun } from '../../backend/task-backend.js';
import {
  storedSchedule,
  type DueSchedules,
  type FireOutcome,
  type ScheduleDeclaration,
  type ScheduleFire,
  type ScheduleStore,
  type StoredSchedule,
} from '../../backend/schedule-store.js';
import { BROKER_TOPIC, type MemoryState } from './memory-state.js';

/** One schedule's fields, under the names and in the text form of its Redis hash. */
type Fields = Record<string, string>;

/**
 * The in-memory {@link ScheduleStore}: the same steps as `lua/schedule-*.lua`,
 * each done in one turn of the event loop.
 */
export class MemoryScheduleStore implements ScheduleStore {
  private readonly hashes = new Map<string, Fields>();
  /** Schedule id → next due time (0: to plan, Infinity: none), as the `schedules` ZSET. */
  private readonly index = new Map<string, number>();

  constructor(
    private readonly state: MemoryState,
    /** Stores a run as an enqueue does. */
    private readonly storeRun: (run: NewRun) => Promise<unknown>,
  ) {}

  async declare(
    declarations: readonly ScheduleDeclaration[],
    queues: readonly string[],
    staleMs: number,
  ): Promise<string[]> {
    const now = this.state.clock.now();
    const conflicts: string[] = [];
    const declared = new Set<string>();
    for (const d of declarations) {
      declared.add(d.id);
      if (!this.declareOne(d.id, d.digest, d.def, d.queue, now, staleMs)) conflicts.push(d.id);
    }
    // Deleting the current entry of a Map while iterating it is safe.
    for (const id of this.index.keys()) {
      if (declared.has(id)) continue;
      const fields = this.hashes.get(id)!;
      if (fields['source'] !== 'code') continue;
      const queue =
        fields['queue'] ?? Object.entries(fields).find(([name]) => name.startsWith('specQueue:'))?.[1] ?? undefined;
      if (queue !== undefined && queues.includes(queue)) this.declareOne(id, '-', undefined, undefined, now, staleMs);
    }
    return conflicts;
  }

  /** One declaration, as `schedule-declare.lua`'s `declare`; false for a run-time schedule's id. */
  private declareOne(
    id: string,
    form: string,
    spec: string | undefined,
    queue: string | undefined,
    now: number,
    staleMs: number,
  ): boolean {
    let fields = this.hashes.get(id);
    if (fields?.['source'] === 'api') return false;
    if (!fields) this.hashes.set(id, (fields = {}));
    const seen = fields[`decl:${form}`];
    // A new form is first seen after every other (see schedule-declare.lua).
    const firsts = Object.entries(fields)
      .filter(([name]) => name.startsWith('decl:'))
      .map(([, value]) => Number(value.split('|')[0]));
    const first = seen ? seen.split('|')[0]! : String(Math.max(now, ...firsts.map((f) => f + 1)));
    fields[`decl:${form}`] = `${first}|${now}`;
    fields['source'] = 'code';
    if (spec !== undefined) {
      fields[`spec:${form}`] = spec;
      fields[`specQueue:${form}`] = queue!;
    }
    const forms = Object.entries(fields)
      .filter(([name]) => name.startsWith('decl:'))
      .map(([name, value]) => {
        const [a, b] = value.split('|').map(Number);
        return { form: name.slice(5), first: a!, last: b! };
      });
    const latest = Math.max(...forms.map((f) => f.last));
    let winner: (typeof forms)[number] | undefined;
    let count = 0;
    for (const f of forms) {
      if (f.last < latest - staleMs) {
        delete fields[`decl:${f.form}`];
        delete fields[`spec:${f.form}`];
        delete fields[`specQueue:${f.form}`];
      } else {
        count++;
        if (!winner || f.first > winner.first || (f.first === winner.first && f.form > winner.form)) winner = f;
      }
    }
    const current = fields['digest'];
    if (winner!.form === '-') {
      if (count === 1) {
        this.hashes.delete(id);
        this.index.delete(id);
      } else if (current !== undefined) {
        for (const name of ['def', 'digest', 'queue', 'next']) delete fields[name];
        this.index.set(id, Infinity);
      }
    } else if (current !== winner!.form) {
      fields['def'] = fields[`spec:${winner!.form}`]!;
      fields['digest'] = winner!.form;
      fields['queue'] = fields[`specQueue:${winner!.form}`]!;
      fields['next'] = '';
      this.index.set(id, 0);
      this.state.wakeups.wake(BROKER_TOPIC);
    }
    return true;
  }

  async upsert(id: string, digest: string, def: string, queue: string): Promise<'created' | 'replaced' | 'unchanged'> {
    const current = this.hashes.get(id);
    if (current?.['digest'] === digest && current['source'] === 'api') return 'unchanged';
    const fields: Fields = { def, digest, source: 'api', queue, next: '' };
    for (const name of ['runs', 'skipped', 'lastSlot', 'lastRun', 'lastAt', 'lastBy']) {
      if (current?.[name] !== undefined) fields[name] = current[name];
    }
    this.hashes.set(id, fields);
    this.index.set(id, 0);
    this.state.wakeups.wake(BROKER_TOPIC);
    return current?.['def'] !== undefined ? 'replaced' : 'created';
  }

  async remove(id: string): Promise<boolean> {
    this.index.delete(id);
    return this.hashes.delete(id);
  }

  async due(limit: number): Promise<DueSchedules> {
    const now = this.state.clock.now();
    const ordered = [...this.index.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
    // Due slots first, then schedules to plan (0), as `schedule-due.lua` reads them.
    const dueIds = [...ordered.filter(([, at]) => at > 0 && at <= now), ...ordered.filter(([, at]) => at === 0)].slice(
      0,
      limit,
    );
    const after = ordered.find(([, at]) => at > now && at !== Infinity);
    const due = dueIds.map(([id]) => this.read(id));
    const nextDueAt = dueIds.length === limit ? now : (after?.[1] ?? null);
    return { now, nextDueAt, due };
  }

  async fire(fire: ScheduleFire): Promise<{ outcome: FireOutcome; now: number }> {
    const now = this.state.clock.now();
    const fields = this.hashes.get(fire.id);
    if (!fields || fields['digest'] !== fire.digest || (fields['next'] ?? '') !== fire.next) {
      return { outcome: 'moved', now };
    }
    let following = fire.following === null ? 'end' : String(fire.following);
    const advance = (outcome: FireOutcome): { outcome: FireOutcome; now: number } => {
      const skipped = fire.skipped + (outcome === 'overlap' ? 1 : 0);
      if (skipped > 0) fields['skipped'] = String(Number(fields['skipped'] ?? 0) + skipped);
      fields['next'] = following;
      this.index.set(fire.id, following === 'end' ? Infinity : Number(following));
      return { outcome, now };
    };
    if (fire.slot === null) return advance('advanced');
    const runs = Number(fields['runs'] ?? 0);
    if (fire.limit > 0 && runs >= fire.limit) {
      following = 'end';
      return advance('limit');
    }
    const previous = fields['lastRun'] && this.state.runs.get(fields['lastRun']);
    if (fire.overlapSkip && previous && !previous.settled) return advance('overlap');
    if (this.state.runs.has(fire.runId)) return advance('exists');
    if (fire.limit > 0 && runs + 1 >= fire.limit) following = 'end';
    Object.assign(fields, {
      runs: String(runs + 1),
      lastSlot: String(fire.slot),
      lastRun: fire.runId,
      lastAt: String(now),
      lastBy: fire.firedBy,
    });
    const result = advance('fired');
    // Written before the first await, as the rest: the step stays atomic.
    await this.storeRun({
      id: fire.runId,
      queue: fire.queue,
      priority: fire.priority,
      runAt: 0,
      delayMs: 0,
      leaseTtlMs: fire.leaseTtlMs,
      payload: fire.payload,
      singleLine: true,
      idempotent: true,
    });
    return result;
  }

  async list(): Promise<StoredSchedule[]> {
    return [...this.index.keys()]
      .map((id) => this.read(id))
      .filter((schedule) => schedule.def !== null)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  private read(id: string): StoredSchedule {
    return storedSchedule(id, this.hashes.get(id) ?? {});
  }
}
