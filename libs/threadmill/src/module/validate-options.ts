import type { ThreadmillModuleOptions, ThreadmillOptions } from './threadmill-options.interface.js';
import { ThreadmillOptionsSchema } from './threadmill-options.schema.js';
import { validateSchema } from './validate-schema.js';

/**
 * Applies the defaults to the options given to `forRoot` and validates them.
 * Throws {@link ThreadmillConfigError} listing every bad field.
 */
export function validateOptions(raw: ThreadmillModuleOptions | undefined): ThreadmillOptions {
  const schema = validateSchema(new ThreadmillOptionsSchema(), raw, 'ThreadmillModule.forRoot() / forRootAsync()');
  const { isGlobal: _ignored, ...options } = schema;
  return options;
}
