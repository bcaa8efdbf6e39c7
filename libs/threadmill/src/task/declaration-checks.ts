import { InvalidTaskError } from '../errors/invalid-task.error.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { contractDifference, findContract } from './task-contract.js';
import type { TaskSettings } from './task-settings.js';

// The checks of a task's declaration that both explorers make at boot: the `@Task()` methods' (module/) and the
// microservice handlers' (transport/), which sit above task/.

/**
 * Fails the boot when a task is bound to a backend that no `ThreadmillModule`
 * of the application declares: its runs would have nowhere to go.
 * @param declared the names of the application's backends
 */
export function checkBackendDeclared(
  backend: unknown,
  declared: readonly string[],
  site: string,
  declaration: string,
): void {
  if (typeof backend === 'string' && declared.includes(backend)) return;
  const module =
    typeof backend === 'string' && backend !== DEFAULT_BACKEND
      ? `ThreadmillModule.forRoot({ name: '${backend}', ... })`
      : 'ThreadmillModule.forRoot()';
  throw new InvalidTaskError(
    site,
    `backend ${JSON.stringify(backend)} is not declared by any ThreadmillModule of the application ` +
      `(declared: ${declared.map((name) => `"${name}"`).join(', ')}). Import ${module}, or bind the task to a declared backend.`,
    declaration,
  );
}

/**
 * Fails the boot when a contract of the task's name is defined in this
 * process and disagrees with the task: its producers would store its runs
 * with the contract's queue, priority and lease.
 */
export function checkAgainstContract(settings: TaskSettings, site: string, declaration: string): void {
  const contract = findContract(settings.name);
  const difference = contract && contractDifference(contract.settings, settings);
  if (difference) {
    throw new InvalidTaskError(
      site,
      `it disagrees with contract "${settings.name}" (defineTask) on ${difference} (contract vs task). ` +
        'Make them agree: producers enqueue with the contract, workers run the task.',
      declaration,
    );
  }
}
