import type { InjectionToken, Provider } from '@nestjs/common';
import {
  DiscoveryService,
  ExternalContextCreator,
  HttpAdapterHost,
  MetadataScanner,
  ModulesContainer,
  Reflector,
} from '@nestjs/core';
import { RedisConnections } from '../backend/redis/redis-connections.js';
import { createBackend } from '../backend/partitioned/create-backend.js';
import type { TaskBackend } from '../backend/task-backend.js';
import { RunEvents } from '../events/run-events.js';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { TaskInspector } from '../inspector/task-inspector.js';
import { TaskQueue } from '../queue/task-queue.js';
import { TaskScheduler } from '../schedule/task-scheduler.js';
import { TaskExplorer } from './task.explorer.js';
import { TaskRegistry } from '../task/task.registry.js';
import { DEFAULT_BACKEND } from '../threadmill.constants.js';
import { HandlerExplorer } from '../transport/handler-explorer.js';
import { ThreadmillServerBinder } from '../transport/server-binder.js';
import { THREADMILL_WORKER_OPTIONS } from '../transport/threadmill-worker.module.js';
import { BackendConnection } from './backend-connection.js';
import { BackendDeclaration } from './backend-declaration.js';
import { backendTokens } from './backend-tokens.js';
import type { ThreadmillModuleOptions, ThreadmillOptions } from '../options/threadmill-options.interface.js';
import { validateOptions } from '../options/validate-options.js';

/** A module's providers and the tokens it exports. */
export interface ProviderSet {
  readonly providers: Provider[];
  readonly exports: InjectionToken[];
}

/**
 * The validated options of backend `name`, from its raw options: the name
 * comes from `forRoot` / `forRootAsync` (the tokens carry it), so a factory
 * that answers another one is refused.
 */
function validateNamed(raw: ThreadmillModuleOptions | undefined, name: string): ThreadmillOptions {
  if (raw === undefined) return validateOptions({ name });
  if (typeof raw === 'object' && raw !== null && raw.name !== undefined && raw.name !== name) {
    throw new ThreadmillConfigError([
      `name: the options factory answered ${JSON.stringify(raw.name)} for the module named "${name}"; ` +
        'give name beside useFactory (forRootAsync({ name, useFactory })), not from the factory',
    ]);
  }
  return validateOptions(typeof raw === 'object' && raw !== null ? { ...raw, name } : raw);
}

/**
 * The providers of backend `name`'s storage, for its global core module:
 * the validated options, the Redis connections, the Redis backend, the
 * connection's lifecycle and the backend's run events.
 * @param rawOptions the provider(s) of `backendTokens(name).rawOptions`
 */
export function redisBackendProviders(name: string = DEFAULT_BACKEND, rawOptions: Provider[]): ProviderSet {
  const t = backendTokens(name);
  return {
    providers: [
      ...rawOptions,
      {
        provide: t.options,
        useFactory: (raw: ThreadmillModuleOptions) => validateNamed(raw, name),
        inject: [t.rawOptions],
      },
      {
        provide: t.redis,
        useFactory: (options: ThreadmillOptions) =>
          new RedisConnections(options.connection, options.alias, options.connectTimeoutMs),
        inject: [t.options],
      },
      {
        provide: t.backend,
        useFactory: (connections: RedisConnections, options: ThreadmillOptions) => createBackend(connections, options),
        inject: [t.redis, t.options],
      },
      {
        provide: t.connection,
        useFactory: (connections: RedisConnections, backend: TaskBackend, options: ThreadmillOptions) =>
          new BackendConnection(connections, backend, options),
        inject: [t.redis, t.backend, t.options],
      },
      // One per backend: its producers and workers report into it, listeners (metrics) subscribe.
      { provide: t.events, useFactory: () => new RunEvents() },
    ],
    exports: [t.options, t.redis, t.backend, t.events, t.connection],
  };
}

/**
 * The providers every backend has above its storage: its task registry and
 * discovery (of `@Task()` methods and handlers), `TaskQueue`,
 * `TaskInspector` and server binding, each under backend `name`'s tokens. They inject the backend, its
 * options and its run events by `backendTokens(name)`, whatever provides
 * them (the Redis core module, or an in-memory backend in tests).
 */
export function backendProviders(name: string = DEFAULT_BACKEND): ProviderSet {
  const t = backendTokens(name);
  return {
    providers: [
      { provide: t.registry, useFactory: () => new TaskRegistry(name) },
      {
        provide: t.declaration,
        useFactory: (registry: TaskRegistry) => new BackendDeclaration(registry),
        inject: [t.registry],
      },
      {
        provide: t.explorer,
        useFactory: (
          discovery: DiscoveryService,
          scanner: MetadataScanner,
          reflector: Reflector,
          registry: TaskRegistry,
          options: ThreadmillOptions,
          backend: TaskBackend,
          connection: BackendConnection | undefined,
          handlers: HandlerExplorer,
        ) => new TaskExplorer(discovery, scanner, reflector, registry, options, backend, connection, [handlers]),
        inject: [
          DiscoveryService,
          MetadataScanner,
          Reflector,
          t.registry,
          t.options,
          t.backend,
          { token: t.connection, optional: true },
          t.handlers,
        ],
      },
      {
        provide: t.queue,
        useFactory: (...deps: ConstructorParameters<typeof TaskQueue>) => new TaskQueue(...deps),
        inject: [t.registry, t.backend, t.options, t.events],
      },
      {
        provide: t.scheduler,
        useFactory: (...deps: ConstructorParameters<typeof TaskScheduler>) => new TaskScheduler(...deps),
        inject: [t.registry, t.backend, t.options],
      },
      {
        provide: t.inspector,
        useFactory: (...deps: ConstructorParameters<typeof TaskInspector>) => new TaskInspector(...deps),
        inject: [t.backend, t.options],
      },
      {
        provide: t.handlers,
        useFactory: (...deps: ConstructorParameters<typeof HandlerExplorer>) => new HandlerExplorer(...deps),
        inject: [DiscoveryService, MetadataScanner, ExternalContextCreator, t.registry, t.options],
      },
      {
        provide: t.binder,
        useFactory: (...deps: ConstructorParameters<typeof ThreadmillServerBinder>) =>
          new ThreadmillServerBinder(...deps),
        inject: [
          ModulesContainer,
          HttpAdapterHost,
          t.backend,
          t.registry,
          t.events,
          t.options,
          { token: THREADMILL_WORKER_OPTIONS, optional: true },
        ],
      },
    ],
    exports: [t.queue, t.scheduler, t.inspector, t.registry],
  };
}
