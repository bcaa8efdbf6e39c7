/** Queues the demo's batches go to. */
export const BATCH_QUEUES = ['default', 'emails', 'billing'];

/** Queues of the demo backend: the batches', and `maintenance` for the scheduled task. */
export const DEMO_QUEUES = [...BATCH_QUEUES, 'maintenance'];
