import {
  Module,
  type DynamicModule,
  type InjectionToken,
  type ModuleMetadata,
  type OptionalFactoryDependency,
} from '@nestjs/common';
import { validateServerOptions, type ThreadmillServerOptions } from './threadmill-server.options.js';

/**
 * The token of the worker settings a `ThreadmillServer` reads when it joins
 * its application (given by {@link ThreadmillWorkerModule}); provide it
 * yourself to override them.
 */
export const THREADMILL_WORKER_OPTIONS = Symbol('THREADMILL_WORKER_OPTIONS');

/** Options of {@link ThreadmillWorkerModule.forRootAsync}. */
export interface ThreadmillWorkerModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Builds the worker's settings, e.g. from `ConfigService`. */
  useFactory: (...args: any[]) => ThreadmillServerOptions | Promise<ThreadmillServerOptions>;
  /** Providers passed to `useFactory`. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
}

/**
 * How the application's worker consumes (`queues`, `concurrency`,
 * `prefetch`, `shutdownTimeoutMs`, ...: the options of `ThreadmillServer`),
 * configured in the worker's module like any Nest module, e.g. from
 * `ConfigService`. Every `ThreadmillServer` of the application reads them
 * when it starts, and so does each process of a `runWorker` pool.
 *
 * Precedence, highest first: `runWorker`'s flags and their environment
 * variables, the options given to `new ThreadmillServer({...})`, this
 * module's, the defaults. The backend (Redis, queues, leases) stays
 * `ThreadmillModule`'s.
 *
 * @example
 * ```ts
 * ThreadmillWorkerModule.forRootAsync({
 *   imports: [ConfigModule],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ concurrency: config.get('WORKER_CONCURRENCY') }),
 * });
 * ```
 */
@Module({})
export class ThreadmillWorkerModule {
  /** @throws ThreadmillConfigError listing every bad field */
  static forRoot(options: ThreadmillServerOptions): DynamicModule {
    const validated = validateServerOptions(options, 'ThreadmillWorkerModule.forRoot()');
    return {
      module: ThreadmillWorkerModule,
      global: true,
      providers: [{ provide: THREADMILL_WORKER_OPTIONS, useValue: validated }],
      exports: [THREADMILL_WORKER_OPTIONS],
    };
  }

  /** The settings from a factory; bad ones fail the boot with a `ThreadmillConfigError`. */
  static forRootAsync(options: ThreadmillWorkerModuleAsyncOptions): DynamicModule {
    return {
      module: ThreadmillWorkerModule,
      global: true,
      imports: options.imports ?? [],
      providers: [
        {
          provide: THREADMILL_WORKER_OPTIONS,
          useFactory: async (...args: unknown[]) =>
            validateServerOptions(await options.useFactory(...args), 'ThreadmillWorkerModule.forRootAsync()'),
          inject: options.inject ?? [],
        },
      ],
      exports: [THREADMILL_WORKER_OPTIONS],
    };
  }
}
