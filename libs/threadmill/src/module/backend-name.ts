import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { NAME_PATTERN } from '../options/threadmill-options.schema.js';

/**
 * The backend name a module's options give (`name`), the default one when
 * none: checked where the module is declared, since its tokens carry it.
 * @throws ThreadmillConfigError naming the bad name and `where`
 */
export function backendName(name: unknown, where: string): string {
  if (name === undefined) return DEFAULT_BACKEND;
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new ThreadmillConfigError(
      [`name: got ${JSON.stringify(name)}; must be 1-64 characters of letters, digits, "_", "." or "-"`],
      where,
    );
  }
  return name;
}
