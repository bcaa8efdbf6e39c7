import type { EnqueueOptions } from '../queue/enqueue-options.interface.js';

/**
 * A payload with the options of its run, for `ThreadmillClient.send` and
 * `emit` (Nest's transports carry per-message options the same way):
 * `client.emit('reports.build', new ThreadmillRecord({ month }, { delayMs: 60_000 }))`.
 */
export class ThreadmillRecord<T = unknown> {
  constructor(
    readonly data: T,
    readonly options: Omit<EnqueueOptions, 'waitable'> = {},
  ) {}
}
