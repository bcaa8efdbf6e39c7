import type { ThreadmillModuleOptions, ThreadmillOptions } from './threadmill-options.interface.js';
import { ThreadmillOptionsSchema } from './threadmill-options.schema.js';
import { validateSchema } from './validate-schema.js';

/**
 * Applies the defaults to the options given to `forRoot` (or to a
 * standalone client, named by `where`) and validates them.
 * Throws {@link ThreadmillConfigError} listing every bad field.
 */
export function validateOptions(
  raw: ThreadmillModuleOptions | undefined,
  where = 'ThreadmillModule.forRoot() / forRootAsync()',
): ThreadmillOptions {
  const schema = validateSchema(new ThreadmillOptionsSchema(), raw, where);
  const { isGlobal: _ignored, ...options } = schema;
  // A named backend's keys live under its name unless it says otherwise.
  if (raw?.alias === undefined) options.alias = options.name;
  return options;
}
