import type { Acknowledgement } from '../../task-backend.js';

/**
 * Appends one acknowledgement in the acknowledge script's item format: an
 * outcome code (lower case when the reaper settles an expired lease), the
 * queue index, id, token and the outcome's values.
 */
export function encodeAcknowledgement(args: (string | number)[], ack: Acknowledgement, queue: number): void {
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
