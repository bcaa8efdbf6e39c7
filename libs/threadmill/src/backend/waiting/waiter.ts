import type { RunWaiter } from './run-waiter.js';

/** What `TaskQueue` asks of the process's waiter (see {@link RunWaiter}). */
export type Waiter = Pick<RunWaiter, 'wait' | 'register' | 'stored' | 'forget' | 'close'>;
