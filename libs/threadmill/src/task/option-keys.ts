import { InvalidTaskError } from '../errors/invalid-task.error.js';
import { closestKey } from '../options/closest-key.js';

/** The option keys a task declaration (`@Task()`, a handler's extras, `defineTask()`) takes. */
export interface AcceptedKeys {
  /** The keys it takes, in the order its documentation lists them. */
  readonly keys: readonly string[];
  /** What the message calls them (`@EventPattern() extras`). @defaultValue the declaration */
  readonly of?: string;
  /** Keys it does not take that another declaration does: each with where it goes instead. */
  readonly elsewhere?: Readonly<Record<string, string>>;
  /**
   * Keys that belong to someone else sharing the object and are let through:
   * a handler served by every transport shares its extras with Nest's other
   * transports (`qos` is MQTT's).
   */
  readonly foreign?: readonly string[];
  /**
   * The object is shared with code that may read keys of its own (a handler
   * served by every transport: a third-party transport may read any key of
   * its extras), so only a key that looks like a misspelt one of `keys`, or
   * one of `elsewhere`, is refused; any other is let through.
   */
  readonly shared?: boolean;
}

/**
 * The keys of `T` as a list the compiler holds to `T`: every key of the list
 * is one of `T`'s, and every key of `T` is in the list, so an option added
 * to the interface cannot be missing from the check.
 */
export function keysOf<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    keys: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : never),
  ): K => keys;
}

/**
 * Fails the boot when a declaration's options hold a key it does not take,
 * as the module's options do (`forbidNonWhitelisted`): a misspelt option
 * (`nmae`, `retries`) would otherwise be ignored without a word, and the task
 * would run with the default the user meant to change.
 * @param site where the task is declared (`EmailService#send`), for the error
 * @param declaration what declares it (`@Task()`, `@EventPattern()`, `defineTask()`)
 * @throws InvalidTaskError naming every such key with where it goes instead,
 *   or the closest key the declaration takes, and the keys it takes
 */
export function checkOptionKeys(options: unknown, accepted: AcceptedKeys, site: string, declaration: string): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidTaskError(site, `its options must be an object { ${accepted.keys.join(', ')} }.`, declaration);
  }
  const problems: string[] = [];
  for (const key of Object.keys(options)) {
    if (accepted.keys.includes(key) || accepted.foreign?.includes(key)) continue;
    const instead = accepted.elsewhere?.[key];
    if (instead !== undefined) {
      problems.push(`option "${key}" does not apply here: ${instead}`);
      continue;
    }
    const closest = closestKey(key, accepted.keys);
    if (closest === undefined && accepted.shared) continue;
    problems.push(`unknown option "${key}"${closest === undefined ? '' : ` (did you mean "${closest}"?)`}`);
  }
  if (problems.length === 0) return;
  throw new InvalidTaskError(
    site,
    `${problems.join('; ')}. Valid options of ${accepted.of ?? declaration}: ${accepted.keys.join(', ')}.`,
    declaration,
  );
}
