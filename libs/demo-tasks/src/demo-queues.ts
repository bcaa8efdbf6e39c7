/** Queues of the demo backend. */
export const DEMO_QUEUES = ['default', 'emails', 'billing'];
