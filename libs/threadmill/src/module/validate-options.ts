import { validateSync, type ValidationError } from 'class-validator';
import { inspect } from 'node:util';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import type { ThreadmillModuleOptions, ThreadmillOptions } from './threadmill-options.interface.js';
import { ThreadmillOptionsSchema } from './threadmill-options.schema.js';

function describe(value: unknown): string {
  return inspect(value, { depth: 1, breakLength: Infinity, maxStringLength: 80 });
}

function flatten(errors: ValidationError[], parent = ''): string[] {
  return errors.flatMap((error) => {
    const path = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.entries(error.constraints ?? {}).map(([rule, message]) =>
      rule === 'whitelistValidation'
        ? `${path}: unknown option (given ${describe(error.value)}); remove it or check its spelling`
        : `${path}: got ${describe(error.value)}; ${message} (rule: ${rule})`,
    );
    return [...own, ...flatten(error.children ?? [], path)];
  });
}

/**
 * Applies the defaults to the options given to `forRoot` and validates them.
 * Throws {@link ThreadmillConfigError} listing every bad field.
 */
export function validateOptions(raw: ThreadmillModuleOptions | undefined): ThreadmillOptions {
  if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) {
    throw new ThreadmillConfigError([`options: got ${describe(raw)}; must be an object`]);
  }
  const schema = new ThreadmillOptionsSchema();
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (value !== undefined) (schema as unknown as Record<string, unknown>)[key] = value;
  }
  const errors = validateSync(schema, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: true },
  });
  if (errors.length > 0) throw new ThreadmillConfigError(flatten(errors));
  const { isGlobal: _ignored, ...options } = schema;
  return options;
}
