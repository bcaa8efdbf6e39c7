import { Module, type DynamicModule, type InjectionToken, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { backendName } from './backend-name.js';
import { backendProviders } from './backend-providers.js';
import { backendTokens } from './backend-tokens.js';
import { ThreadmillCoreModule } from './threadmill-core.module.js';
import type { ThreadmillModuleOptions } from '../options/threadmill-options.interface.js';
import type { ThreadmillModuleAsyncOptions, ThreadmillOptionsFactory } from './threadmill-async-options.interface.js';

/**
 * Threadmill for a Nest application: the Redis backend, discovery of
 * `@Task()` methods and the injectable {@link TaskQueue}. Import it once, in
 * the root module, of every app that enqueues or runs tasks.
 *
 * An application with several backends (several Redis servers or keyspaces)
 * imports one module per backend, each with its own `name`; the module
 * without a name is the default backend, injected as `TaskQueue`.
 *
 * @example
 * ```ts
 * @Module({ imports: [ThreadmillModule.forRoot({ connection: process.env.REDIS_URL }), EmailModule] })
 * export class AppModule {}
 * ```
 */
const fromFactory = (factory: ThreadmillOptionsFactory) => factory.createThreadmillOptions();

@Module({})
export class ThreadmillModule {
  /** Configures Threadmill with static options. */
  static forRoot(options: ThreadmillModuleOptions = {}): DynamicModule {
    const name = backendName(options?.name, 'ThreadmillModule.forRoot()');
    const raw = { provide: backendTokens(name).rawOptions, useValue: options };
    return this.assemble(name, [raw], [], options?.isGlobal);
  }

  /**
   * Configures Threadmill with options built by a factory, a class or an
   * existing provider, e.g. from `ConfigService`.
   */
  static forRootAsync(options: ThreadmillModuleAsyncOptions): DynamicModule {
    const name = backendName(options?.name, 'ThreadmillModule.forRootAsync()');
    const raw = this.asyncProviders(options, backendTokens(name).rawOptions);
    return this.assemble(name, raw, options.imports ?? [], options.isGlobal);
  }

  private static assemble(
    name: string,
    rawOptions: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    isGlobal: boolean | undefined,
  ): DynamicModule {
    const { providers, exports } = backendProviders(name);
    return {
      module: ThreadmillModule,
      global: isGlobal ?? true,
      imports: [ThreadmillCoreModule.register(name, rawOptions, imports), DiscoveryModule],
      providers,
      exports,
    };
  }

  private static asyncProviders(options: ThreadmillModuleAsyncOptions, provide: InjectionToken): Provider[] {
    if (options.useFactory) {
      return [{ provide, useFactory: options.useFactory, inject: options.inject ?? [] }];
    }
    const factoryClass = options.useClass ?? options.useExisting;
    if (!factoryClass) {
      throw new TypeError('ThreadmillModule.forRootAsync() needs one of useFactory, useClass or useExisting.');
    }
    return options.useClass
      ? [options.useClass, { provide, useFactory: fromFactory, inject: [options.useClass] }]
      : [{ provide, useFactory: fromFactory, inject: [factoryClass] }];
  }
}

/**
 * The backend name a module declares, checked at once: its injection tokens
 * carry it, so it cannot wait for the options' validation at boot.
 * @throws ThreadmillConfigError for a name that is not a short word
 */
