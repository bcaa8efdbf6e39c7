// Loaded into a benchmark worker by idle-stages.mjs (`--import`): for each
// handler call of the latency phase, when the worker's event loop last read
// from a socket before it (the run's arrival, in an idle worker). Answers
// `{ cmd: 'hook' }` with `{ type: 'hook', dataAt }`, in handler order.
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const { Recorder } = await import(fileURLToPath(new URL('../../dist/benchmarks/workers/recorder.js', import.meta.url)));
const { now } = await import(fileURLToPath(new URL('../../dist/benchmarks/workers/protocol.js', import.meta.url)));

let lastRead = 0;
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (event, ...args) {
  if (event === 'data') lastRead = now();
  return emit.call(this, event, ...args);
};
const dataAt = [];
const record = Recorder.prototype.record;
Recorder.prototype.record = function (payload) {
  if (payload.t !== undefined) dataAt.push(lastRead);
  return record.call(this, payload);
};
process.on('message', (message) => {
  if (message?.cmd === 'hook') process.send({ type: 'hook', dataAt });
});
