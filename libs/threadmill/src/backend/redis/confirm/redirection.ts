/** A Redis Cluster refusal: the command did not run, and where (or when) to send it again. */
export interface Redirection {
  /** `moved`: the slot is served by `to`; `ask`: send it to `to` after ASKING; `retry`: again after a pause. */
  readonly kind: 'moved' | 'ask' | 'retry';
  /** The node named, `host:port`. */
  readonly to?: string;
}

/**
 * The refusal `error` is, or undefined when it is no refusal (it may then
 * have come after the command ran: a dropped connection, a timeout). Redis
 * answers MOVED, ASK, TRYAGAIN and CLUSTERDOWN before it runs a command.
 */
export function redirectionOf(error: unknown): Redirection | undefined {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return undefined;
  const [kind, , to] = error.message.split(' ');
  if (kind === 'MOVED' || kind === 'ASK')
    return to === undefined ? { kind: 'retry' } : { kind: kind === 'MOVED' ? 'moved' : 'ask', to };
  if (kind === 'TRYAGAIN' || kind === 'CLUSTERDOWN') return { kind: 'retry' };
  return undefined;
}
