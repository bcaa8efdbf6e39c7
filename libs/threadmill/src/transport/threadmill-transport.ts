/**
 * The transport id of `ThreadmillServer`. Handlers for every transport are
 * served; name this one to serve a handler only through Threadmill in an
 * application with several transports:
 * `@EventPattern('emails.welcome', THREADMILL_TRANSPORT, { queue: 'emails' })`.
 */
export const THREADMILL_TRANSPORT: unique symbol = Symbol('THREADMILL');
