import { ThreadmillError } from './threadmill.error.js';

/** Two `@Task()` methods declare the same task name; the boot fails naming both sites. */
export class DuplicateTaskError extends ThreadmillError {
  constructor(
    readonly taskName: string,
    readonly firstSite: string,
    readonly secondSite: string,
  ) {
    super(
      firstSite === secondSite
        ? `Task name "${taskName}" is declared twice by ${firstSite}: its provider is instantiated ` +
            `in more than one module. Provide it in one module and export it from there.`
        : `Task name "${taskName}" is declared twice: by ${firstSite} and by ${secondSite}. ` +
            `Give one of them a distinct name with @Task({ name: '...' }).`,
    );
  }
}
