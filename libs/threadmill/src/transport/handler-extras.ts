import { checkOptionKeys } from '../task/option-keys.js';
import type { TaskOptions } from '../task/task-options.interface.js';
import { THREADMILL_TRANSPORT } from './threadmill-transport.js';

/** The options of `@Task()` a handler's extras set for its task (`@EventPattern('x', { queue })`). */
const HANDLER_EXTRAS_KEYS = [
  'backend',
  'queue',
  'priority',
  'retry',
  'leaseTtlMs',
  'resultTtlMs',
  'timeoutMs',
] as const satisfies readonly (keyof TaskOptions)[];

/** The options of `@Task()` a handler does not take, with why. */
const NOT_FOR_HANDLERS: Readonly<Record<string, string>> = {
  name: "a handler's task is named by its pattern",
  schedule: 'a schedule is declared on a @Task() method (@Task({ schedule }))',
  limit:
    "a task limit is declared on a @Task() method (@Task({ limit })); a queue's is set by the module's rateLimits and concurrencyCaps",
};

/**
 * The extras keys Nest's own transports read (`qos`: MQTT's subscription;
 * NATS's `queue` is a key Threadmill reads too). A handler without a
 * transport is served by every transport of the application, so its extras
 * may hold them.
 */
const NEST_TRANSPORT_KEYS = ['qos'];

/**
 * Fails the boot for an extras key the handler's task does not take, as
 * `@Task()` does for its options. A handler bound to `THREADMILL_TRANSPORT`
 * is Threadmill's alone, so every other key is refused. One served by every
 * transport shares its extras with the application's other transports, which
 * may read keys of their own: Nest's (`qos`) and a misspelt Threadmill key
 * (`qeue`) or a misplaced one (`schedule`) are still refused, any other key
 * is theirs.
 * @throws InvalidTaskError naming the site, each such key and the keys the extras take
 */
export function checkHandlerExtras(extras: unknown, transport: unknown, site: string, declaration: string): void {
  const shared = transport !== THREADMILL_TRANSPORT;
  const foreign = shared ? NEST_TRANSPORT_KEYS : [];
  const accepted = {
    keys: HANDLER_EXTRAS_KEYS,
    of: `${declaration} extras`,
    elsewhere: NOT_FOR_HANDLERS,
    foreign,
    shared,
  };
  checkOptionKeys(extras, accepted, site, declaration);
}
