import { checkOptionKeys, keysOf } from './option-keys.js';
import type { TaskOptions } from './task-options.interface.js';

/** What `@Task(options)` takes: every option of {@link TaskOptions}. */
const TASK_OPTION_KEYS = keysOf<TaskOptions>()([
  'name',
  'backend',
  'queue',
  'priority',
  'retry',
  'leaseTtlMs',
  'timeoutMs',
  'resultTtlMs',
  'schedule',
  'limit',
]);

/**
 * What `@Task(contract, options)` takes: the settings that concern only the
 * worker that runs the task. The contract fixes the others, which its
 * producers store with each run.
 */
export const BINDING_OPTION_KEYS = [
  'retry',
  'resultTtlMs',
  'timeoutMs',
  'limit',
] as const satisfies readonly (keyof TaskOptions)[];

/** The options of `@Task()` that a contract fixes instead (`defineTask(name, options)`). */
const CONTRACT_FIXED_KEYS = [
  'name',
  'backend',
  'queue',
  'priority',
  'leaseTtlMs',
] as const satisfies readonly (keyof TaskOptions)[];

/**
 * Fails the boot for a key `@Task()` does not take, naming the closest one it
 * does; for a task bound to a contract, a setting the contract fixes is
 * refused saying so, as the task would not have it.
 * @param contract the name of the contract the task binds to (`@Task(contract, options)`), if it does
 * @throws InvalidTaskError naming the site, each such key and the keys `@Task()` takes
 */
export function checkTaskOptionKeys(options: unknown, contract: string | undefined, site: string): void {
  if (contract === undefined) {
    checkOptionKeys(options, { keys: TASK_OPTION_KEYS }, site, '@Task()');
    return;
  }
  const elsewhere: Record<string, string> = {};
  for (const key of TASK_OPTION_KEYS) {
    if ((BINDING_OPTION_KEYS as readonly string[]).includes(key)) continue;
    if (key === 'name') elsewhere[key] = `the task takes the name of contract "${contract}"`;
    else if ((CONTRACT_FIXED_KEYS as readonly string[]).includes(key)) {
      elsewhere[key] =
        `contract "${contract}" fixes it for its producers and this worker alike; set it in its defineTask()`;
    } else elsewhere[key] = 'a task bound to a contract does not take it';
  }
  checkOptionKeys(options, { keys: BINDING_OPTION_KEYS, elsewhere }, site, '@Task(contract, options)');
}
