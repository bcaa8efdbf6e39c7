/** Environment variable that makes a forked process a pool member, with its slot. */
export const POOL_SLOT_ENV = 'THREADMILL_POOL_SLOT';

/**
 * Environment variable of a pool member: the Redis safety warnings its
 * supervisor logged (a JSON array of `warnOnce` keys), which the member does
 * not log again. Read at the fork, so a recycled member gets those logged
 * since the pool started too.
 */
export const SAFETY_WARNINGS_ENV = 'THREADMILL_REDIS_WARNED';

/** The safety warnings `SAFETY_WARNINGS_ENV` names; none when it is unset or unreadable (then they are logged again). */
export function readSafetyWarnings(value: string | undefined): string[] {
  if (!value) return [];
  try {
    const keys: unknown = JSON.parse(value);
    return Array.isArray(keys) ? keys.filter((key): key is string => typeof key === 'string') : [];
  } catch {
    return [];
  }
}

/** Sent by a pool member over IPC just before it exits on its own. */
export interface EndingMessage {
  readonly type: 'threadmill:ending';
  readonly reason: 'empty' | 'max-tasks';
}

/**
 * Sent by a pool member over IPC once it handles stop messages and signals
 * itself: until then (while it loads modules and boots), a signal would kill
 * it with Node's default action and a message would go unheard, so the
 * supervisor holds a stop back until this comes.
 */
export interface ReadyMessage {
  readonly type: 'threadmill:ready';
}

export function isReadyMessage(message: unknown): message is ReadyMessage {
  return (message as ReadyMessage | null)?.type === 'threadmill:ready';
}

/**
 * The supervisor asks a pool member to stop: to drain, or with `hard`, to
 * abandon what runs. A message, not a signal: when a terminal's Ctrl-C or a
 * service manager signals the whole process group, every member already got
 * that signal, and a second one from the supervisor would read as a second
 * Ctrl-C, the hard stop.
 */
export interface StopMessage {
  readonly type: 'threadmill:stop';
  readonly hard: boolean;
}

export function isStopMessage(message: unknown): message is StopMessage {
  return (message as StopMessage | null)?.type === 'threadmill:stop';
}

export function isEndingMessage(message: unknown): message is EndingMessage {
  return (message as EndingMessage | null)?.type === 'threadmill:ending';
}
