import { validateSync, type ValidationError } from 'class-validator';
import { inspect } from 'node:util';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { maskUrl } from './mask-url.js';

/** `value` with its strings' URL credentials masked, down to the depth {@link describe} prints. */
function masked(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return maskUrl(value);
  if (depth > 1 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => masked(item, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, masked(item, depth + 1)]));
}

/**
 * A value as an error message quotes it, any URL's user and password masked:
 * before the long strings are cut (a cut could drop the `@` that marks them)
 * and again in the text, for what the copy does not reach.
 */
function describe(value: unknown): string {
  return maskUrl(inspect(masked(value), { depth: 1, breakLength: Infinity, maxStringLength: 80 }));
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
 * Copies the options a user gave onto `schema` (a class-validator class whose
 * initial values are the defaults) and validates it, with unknown fields
 * forbidden so a misspelt option fails too.
 * @param where the call that took the options, named in the error
 * @throws ThreadmillConfigError listing every bad field: its name, the value given and the rule
 */
export function validateSchema<T extends object>(schema: T, raw: unknown, where: string): T {
  if (raw !== undefined && (typeof raw !== 'object' || raw === null || Array.isArray(raw))) {
    throw new ThreadmillConfigError([`options: got ${describe(raw)}; must be an object`], where);
  }
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (value !== undefined) (schema as Record<string, unknown>)[key] = value;
  }
  const errors = validateSync(schema, {
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: true },
  });
  if (errors.length > 0) throw new ThreadmillConfigError(flatten(errors), where);
  return schema;
}
