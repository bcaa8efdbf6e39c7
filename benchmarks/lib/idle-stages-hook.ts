/**
 * Preloaded into a benchmark worker by the tool `idle-stages`
 * (`node --import`): for each handler call of the latency phase, when the
 * worker's event loop last read from a socket before it (the run's arrival,
 * in an idle worker). Answers `{ cmd: 'hook' }` with
 * `{ type: 'hook', dataAt }`, in handler order.
 */
import net from 'node:net';
import { now } from '../workers/protocol.js';
import { Recorder } from '../workers/recorder.js';

/** What the hook answers: for each handler call with an enqueue time, when its socket was last read. */
export interface HookReport {
  readonly type: 'hook';
  readonly dataAt: number[];
}

let lastRead = 0;
const emit = net.Socket.prototype.emit as (this: net.Socket, event: string | symbol, ...args: unknown[]) => boolean;
net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
  if (event === 'data') lastRead = now();
  return emit.call(this, event, ...args);
};
const dataAt: number[] = [];
const record = Recorder.prototype.record;
Recorder.prototype.record = function (this: Recorder, payload) {
  if (payload.t !== undefined) dataAt.push(lastRead);
  return record.call(this, payload);
};
process.on('message', (message: { cmd?: string } | undefined) => {
  if (message?.cmd === 'hook') process.send?.({ type: 'hook', dataAt } satisfies HookReport);
});
