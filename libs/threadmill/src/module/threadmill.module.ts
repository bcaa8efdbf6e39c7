import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TaskInspector } from '../inspector/task-inspector.js';
import { TaskQueue } from '../queue/task-queue.js';
import { TaskExplorer } from '../task/task.explorer.js';
import { TaskRegistry } from '../task/task.registry.js';
import { HandlerExplorer } from '../transport/handler-explorer.js';
import { ThreadmillServerBinder } from '../transport/server-binder.js';
import { THREADMILL_RAW_OPTIONS } from '../threadmill.constants.js';
import { ThreadmillCoreModule } from './threadmill-core.module.js';
import type {
  ThreadmillModuleAsyncOptions,
  ThreadmillModuleOptions,
  ThreadmillOptionsFactory,
} from './threadmill-options.interface.js';

/**
 * Threadmill for a Nest application: the Redis backend, discovery of
 * `@Task()` methods and the injectable {@link TaskQueue}. Import it once, in
 * the root module, of every app that enqueues or runs tasks.
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
    return this.assemble([{ provide: THREADMILL_RAW_OPTIONS, useValue: options }], [], options?.isGlobal);
  }

  /**
   * Configures Threadmill with options built by a factory, a class or an
   * existing provider, e.g. from `ConfigService`.
   */
  static forRootAsync(options: ThreadmillModuleAsyncOptions): DynamicModule {
    return this.assemble(this.asyncProviders(options), options.imports ?? [], options.isGlobal);
  }

  private static assemble(
    rawOptions: Provider[],
    imports: NonNullable<DynamicModule['imports']>,
    isGlobal: boolean | undefined,
  ): DynamicModule {
    return {
      module: ThreadmillModule,
      global: isGlobal ?? true,
      imports: [ThreadmillCoreModule.register(rawOptions, imports), DiscoveryModule],
      providers: [TaskRegistry, TaskExplorer, TaskQueue, TaskInspector, HandlerExplorer, ThreadmillServerBinder],
      exports: [TaskQueue, TaskInspector, TaskRegistry],
    };
  }

  private static asyncProviders(options: ThreadmillModuleAsyncOptions): Provider[] {
    if (options.useFactory) {
      return [{ provide: THREADMILL_RAW_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] }];
    }
    const factoryClass = options.useClass ?? options.useExisting;
    if (!factoryClass) {
      throw new TypeError('ThreadmillModule.forRootAsync() needs one of useFactory, useClass or useExisting.');
    }
    return options.useClass
      ? [options.useClass, { provide: THREADMILL_RAW_OPTIONS, useFactory: fromFactory, inject: [options.useClass] }]
      : [{ provide: THREADMILL_RAW_OPTIONS, useFactory: fromFactory, inject: [factoryClass] }];
  }
}
