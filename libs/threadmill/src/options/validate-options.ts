import { validateSync } from 'class-validator';
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

/**
 * What the module's rule for option `option` says is wrong with `value`, or
 * undefined when it holds: for a task's setting of the same meaning
 * (`@Task({ leaseTtlMs })`), which is then held to the module's rule rather
 * than to a copy of it that could drift.
 */
export function moduleOptionProblem(option: keyof ThreadmillOptionsSchema, value: unknown): string | undefined {
  const schema = new ThreadmillOptionsSchema();
  (schema as unknown as Record<string, unknown>)[option] = value;
  const error = validateSync(schema).find((found) => found.property === option);
  return error ? Object.values(error.constraints ?? {}).join('; ') : undefined;
}
