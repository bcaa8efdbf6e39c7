/** Environment variable that makes a forked process a pool member, with its slot. */
export const POOL_SLOT_ENV = 'THREADMILL_POOL_SLOT';

/** Sent by a pool member over IPC just before it exits on its own. */
export interface EndingMessage {
  readonly type: 'threadmill:ending';
  readonly reason: 'empty' | 'max-tasks';
}

export function isEndingMessage(message: unknown): message is EndingMessage {
  return (message as EndingMessage | null)?.type === 'threadmill:ending';
}
