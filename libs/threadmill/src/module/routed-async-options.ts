import type { DynamicModule, FactoryProvider } from '@nestjs/common';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';

/**
 * `forRootAsync` options of a module that serves HTTP routes (dashboard,
 * metrics): `path` is given here, the other options come from a factory.
 * Nest registers routes before any provider exists, so a factory cannot move them.
 */
export interface RoutedAsyncOptions<Options extends { path?: unknown }> {
  /** Where the module's routes are mounted; the module's `forRoot` default when omitted. */
  path?: Options['path'];
  /** Modules exporting the providers the factory injects (e.g. `ConfigModule`). */
  imports?: NonNullable<DynamicModule['imports']>;
  /** Providers passed to `useFactory`, in order. */
  inject?: FactoryProvider['inject'];
  /** The options other than `path`, validated when the factory resolves (the application boots). */
  useFactory: (...args: any[]) => Omit<Options, 'path'> | Promise<Omit<Options, 'path'>>;
}

/**
 * Validates `path` at once and builds the provider of the module's whole
 * options under `provide`: the factory's answer with `path`, validated by
 * `validate` when the application boots.
 * @param where the call that took the options, named in errors
 * @throws ThreadmillConfigError for a missing factory or an invalid `path`
 */
export function routedAsyncOptions<Options extends { path?: unknown }, Resolved extends { path: unknown }>(
  options: RoutedAsyncOptions<Options>,
  provide: symbol,
  validate: (raw: Options) => Resolved,
  where: string,
): { path: Resolved['path']; provider: FactoryProvider<Resolved> } {
  if (typeof options?.useFactory !== 'function') {
    throw new ThreadmillConfigError(['useFactory: must be a function returning the options'], where);
  }
  const { path } = validate({ path: options.path } as Options);
  const provider: FactoryProvider<Resolved> = {
    provide,
    inject: options.inject ?? [],
    useFactory: async (...args: unknown[]) => {
      const given: unknown = await options.useFactory(...args);
      if (given && typeof given === 'object' && 'path' in given) {
        throw new ThreadmillConfigError(
          ['path: the factory cannot set it (routes exist before providers); give it beside useFactory'],
          where,
        );
      }
      return validate({ ...(given as object), path } as Options);
    },
  };
  return { path, provider };
}
