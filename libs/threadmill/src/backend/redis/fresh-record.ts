import type { StoredRun } from '../task-backend.js';

/**
 * The run fields of a fresh record, a run no attempt has settled yet, as the
 * `fresh` hash stores it: `enqueuedAt|score|leaseTtl|runAfter|queue|payload`
 * (see `lua/includes/fresh.lua`). Its status is READY (RUNNING while leased,
 * which the lease overlay says) with no attempts, as for a run hash that has
 * no status field yet.
 */
export function freshRunFields(record: string): StoredRun {
  const [enqueuedAt, score, leaseTtl, runAfter, queue] = record.split('|', 5);
  const fields: Record<string, string> = {
    payload: freshPayload(record),
    queue: queue!,
    score: score!,
    enqueuedAt: enqueuedAt!,
  };
  if (leaseTtl) fields['leaseTtl'] = leaseTtl;
  if (runAfter) fields['runAfter'] = runAfter;
  return fields;
}

/** What a claim needs of a fresh record: its enqueue time, lease override (ms) if any, and payload. */
export function freshHead(record: string): [enqueuedAt: number, leaseTtlMs: number | undefined, payload: string] {
  const first = record.indexOf('|');
  const second = record.indexOf('|', first + 1);
  const third = record.indexOf('|', second + 1);
  const fifth = record.indexOf('|', record.indexOf('|', third + 1) + 1);
  return [
    Number(record.slice(0, first)),
    third > second + 1 ? Number(record.slice(second + 1, third)) : undefined,
    record.slice(fifth + 1),
  ];
}

/** The payload of a fresh record: what follows its fifth '|' (queue names never hold one; a payload may). */
export function freshPayload(record: string): string {
  let at = -1;
  for (let field = 0; field < 5; field++) at = record.indexOf('|', at + 1);
  return record.slice(at + 1);
}
