import type { ResultTtls } from '../../../records/result-ttl.js';
import type { Acknowledgement, LeaseRef } from '../../task-backend.js';

/** A worker's success with no return value: the outcome almost every acknowledgement carries. */
function isPlainSuccess(ack: Acknowledgement): boolean {
  return ack.outcome.kind === 'successful' && ack.outcome.returnValue === undefined && ack.source !== 'reaper';
}

/**
 * The TTL `ack`'s run is kept for when it is not its outcome's default, in
 * `defaults`; undefined when it is (or the outcome does not finish the run).
 */
function ownTtl(ack: Acknowledgement, defaults: ResultTtls): number | undefined {
  const ttl = ack.resultTtlMs;
  if (ttl === undefined) return undefined;
  const kind = ack.outcome.kind;
  if (kind === 'successful') return ttl === defaults.successful ? undefined : ttl;
  return kind === 'failed' && ttl !== defaults.failed ? ttl : undefined;
}

/**
 * Appends a batch in the acknowledge script's item format. Consecutive plain
 * successes of one queue and one lease token (a claim's runs share their
 * token) travel as one group, `+ queue token ids`, the ids joined by
 * newlines into one value: a batch's arguments are what it costs to encode,
 * send and read back into Lua, and the client pays per value. An id holding
 * a newline travels on its own. Outcomes whose task keeps them for a TTL of
 * its own, other than `defaults`, follow a `K ttl` item (`K ''` returns to
 * the defaults): none when every run keeps the defaults. Start marks
 * (`B queue id token`) come last, after every outcome, as the script requires.
 */
export function encodeAcknowledgements(
  args: (string | number)[],
  acks: readonly Acknowledgement[],
  started: readonly LeaseRef[],
  queueIndex: (queue: string) => number,
  defaults: ResultTtls,
): void {
  encodeOutcomes(args, acks, queueIndex, defaults);
  for (const run of started) args.push('B', queueIndex(run.queue), run.id, run.token);
}

function encodeOutcomes(
  args: (string | number)[],
  acks: readonly Acknowledgement[],
  queueIndex: (queue: string) => number,
  defaults: ResultTtls,
): void {
  // The TTL the script applies to the next outcome: a K item changes it.
  let keep: number | undefined;
  for (let i = 0; i < acks.length;) {
    const ack = acks[i]!;
    const ttl = ownTtl(ack, defaults);
    if (ttl !== keep) {
      args.push('K', ttl ?? '');
      keep = ttl;
    }
    if (!isPlainSuccess(ack) || ack.id.includes('\n')) {
      encodeAcknowledgement(args, ack, queueIndex(ack.queue));
      i++;
      continue;
    }
    let end = i + 1;
    while (end < acks.length && sameGroup(ack, acks[end]!, ttl, defaults)) end++;
    let ids = ack.id;
    for (i++; i < end; i++) ids += '\n' + acks[i]!.id;
    args.push('+', queueIndex(ack.queue), ack.token, ids);
  }
}

function sameGroup(
  first: Acknowledgement,
  next: Acknowledgement,
  ttl: number | undefined,
  defaults: ResultTtls,
): boolean {
  return (
    next.queue === first.queue &&
    next.token === first.token &&
    isPlainSuccess(next) &&
    !next.id.includes('\n') &&
    ownTtl(next, defaults) === ttl
  );
}

/**
 * Appends one acknowledgement in the acknowledge script's item format: an
 * outcome code (lower case when the reaper settles an expired lease), the
 * queue index, id, token and the outcome's values.
 */
function encodeAcknowledgement(args: (string | number)[], ack: Acknowledgement, queue: number): void {
  const { outcome } = ack;
  const reaper = ack.source === 'reaper';
  switch (outcome.kind) {
    case 'successful':
      args.push('S', queue, ack.id, ack.token, outcome.returnValue ?? '');
      return;
    case 'failed':
      args.push(reaper ? 'f' : 'F', queue, ack.id, ack.token, JSON.stringify(outcome.error));
      return;
    case 'retry':
      args.push(reaper ? 'r' : 'R', queue, ack.id, ack.token, JSON.stringify(outcome.error), outcome.delayMs);
      return;
    case 'quarantine':
      args.push(
        reaper ? 'q' : 'Q',
        queue,
        ack.id,
        ack.token,
        outcome.error ? JSON.stringify(outcome.error) : '',
        JSON.stringify({ reason: outcome.reason, message: outcome.message }),
      );
  }
}
